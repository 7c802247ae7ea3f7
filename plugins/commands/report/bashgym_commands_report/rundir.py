"""What a report reads back from a run directory, and only the scrubbed parts of it.

Rows shown on the page come from what the run wrote for people to use: the sinks' outputs
(listed in run.json) and `dropped.jsonl`, both scrubbed before they were written. The charts'
columns (sampler values, judge scores, numbers) come from the outputs when they carry them, else
from DataDesigner's batches, of which only those columns are read. Which stage dropped what comes
from `events.jsonl`: each drop is counted against who made it (its `by`: `sink NAME`, `judge
NAME`, `executor NAME`), else against the step that was running when it happened. The step alone
misleads: a streaming run feeds its sinks inside the `source` step.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.records import DroppedRow

if TYPE_CHECKING:
    import pandas as pd

MAX_SAMPLES = 5  # kept rows shown
ROW_FILES = (".jsonl", ".parquet")
BATCHES = "DataDesigner's batches"  # where charted rows came from, when no output had them
TRACE_FIELDS = ("success", "input_tokens", "output_tokens", "cost_usd")  # parquet sink columns


@dataclass
class Sample:
    """Kept rows as one output holds them."""

    sink: str
    path: str
    rows: list[dict[str, Any]]


@dataclass
class StepDrops:
    """Drops per step of the run (from events.jsonl), and what each sink was given and wrote.

    `by_step` keys a drop by the step of who made it (`sink NAME` for a sink's, `judges` for a
    judge's, `executor`), else by the step running; `anonymous` holds the (step, reason) pairs
    whose drop named nobody, which only the reason's wording can place."""

    by_step: dict[str, Counter[str]] = field(default_factory=dict)
    anonymous: set[tuple[str, str]] = field(default_factory=set)
    sink_in: dict[str, int | None] = field(default_factory=dict)
    written: dict[str, int | None] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)  # in the order they started

    @property
    def known(self) -> bool:
        return bool(self.steps)


@dataclass
class TraceStats:
    """The traces' own outcomes, tokens and cost (what the agent spent, not this run)."""

    where: str  # which output they were read from
    traces: int = 0
    success: int = 0
    failed: int = 0
    unknown: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0  # traces that carry no cost

    def add(self, success: Any, usage: Mapping[str, Any], cost: Any) -> None:
        self.traces += 1
        if success is True:
            self.success += 1
        elif success is False:
            self.failed += 1
        else:
            self.unknown += 1
        for key in ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens"):
            value = usage.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                setattr(self, key, getattr(self, key) + int(value))
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
            self.cost_usd += float(cost)
        else:
            self.unpriced += 1


def step_drops(events: Path) -> StepDrops:
    """Drops per step of the last attempt in `events.jsonl` (a resumed run starts again)."""
    out = StepDrops()
    current: str | None = None
    for item in _events(events):
        kind = item.get("type")
        if kind == "run_started":
            out, current = StepDrops(), None
        elif kind == "step_started":
            current = str(item.get("step"))
            out.steps.append(current)
            if current.startswith("sink "):
                out.sink_in[current[5:]] = _int(item.get("total"))
        elif kind == "step_finished":
            current = None
        elif kind == "row_dropped":
            by, reason = str(item.get("by") or ""), str(item.get("reason"))
            label = f"{by}: {reason}" if by else reason
            step = _step_of(by) or current or ""
            out.by_step.setdefault(step, Counter())[label] += _int(item.get("n")) or 0
            if not by:
                out.anonymous.add((step, label))
        elif kind == "sink_wrote":
            out.written[str(item.get("sink"))] = _int(item.get("rows"))
    return out


def _step_of(by: str) -> str | None:
    """The step whose stage a drop's maker belongs to, as the engine names steps; None when
    `by` names no sink, judge or executor (a pipeline's filter: its step says it)."""
    if by.startswith("sink "):
        return by
    if by.startswith("judge "):
        return "judges"
    if by.startswith("executor"):
        return "executor"
    return None


def _events(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:  # a line torn by a kill
                continue
            if isinstance(item, dict):
                yield item


def read_dropped(run_dir: Path) -> list[DroppedRow]:
    """`dropped.jsonl`: every dropped row, scrubbed, with who dropped it and why."""
    path = run_dir / "dropped.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        item = json.loads(line)
        out.append(DroppedRow(item["by"], item["reason"], item.get("row") or {}))
    return out


def output_files(summary: Mapping[str, Any], run_dir: Path) -> list[tuple[str, Path]]:
    """(sink, file) for every row file the sinks wrote, train before validation."""
    found = []
    outputs = summary.get("outputs")
    for sink, paths in (outputs if isinstance(outputs, Mapping) else {}).items():
        for raw in paths if isinstance(paths, list) else [paths]:
            path = _local(Path(str(raw)), run_dir, summary)
            if path is not None and path.suffix in ROW_FILES:
                found.append((str(sink), path))
    return sorted(found, key=lambda sp: ("val" in sp[1].stem, 0))  # stable: train first


def _local(path: Path, run_dir: Path, summary: Mapping[str, Any]) -> Path | None:
    """The file, or its copy inside a run dir that was moved since it was written."""
    if path.is_file():
        return path
    old = summary.get("run_dir")
    if old:
        try:
            moved = run_dir / path.relative_to(str(old))
        except ValueError:
            return None
        return moved if moved.is_file() else None
    return None


def kept_samples(files: list[tuple[str, Path]], limit: int = MAX_SAMPLES) -> list[Sample]:
    """The first kept rows of the first output that holds any (what a trainer would read)."""
    for sink, path in files:
        try:
            rows = _first_rows(path, limit)
        except (OSError, ValueError):  # pyarrow's errors are ValueErrors or OSErrors
            continue
        if rows:
            return [Sample(sink, str(path), rows)]
    return []


def _first_rows(path: Path, limit: int) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        rows = []
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    item = json.loads(line)
                    rows.append(item if isinstance(item, dict) else {"value": item})
                if len(rows) >= limit:
                    break
        return rows
    import pyarrow.parquet as pq  # ~0.15 s: only when a report is written

    reader = pq.ParquetFile(path)
    for batch in reader.iter_batches(batch_size=limit):
        return batch.to_pylist()[:limit]
    return []


def chart_frame(
    files: list[tuple[str, Path]], run_dir: Path, wanted: list[str]
) -> tuple[pd.DataFrame | None, str]:
    """The charted columns of the kept rows, and where they were read: from a Parquet output
    that has them, else from DataDesigner's batches (those columns only: sampler values, judge
    scores, numbers). Batches hold rows before the run's later judges and sinks."""
    import pandas as pd
    import pyarrow.parquet as pq

    if not wanted:
        return None, ""
    for sink, path in files:
        if path.suffix == ".parquet":
            names = pq.ParquetFile(path).schema_arrow.names
            if present := [c for c in wanted if c in names]:
                table = pq.read_table(path, columns=present)
                return table.to_pandas(ignore_metadata=True), f"{sink}: {path.name}"
    frames = []
    for batch in sorted((run_dir / "datadesigner").glob("*/parquet-files/*.parquet")):
        names = pq.ParquetFile(batch).schema_arrow.names
        if present := [c for c in wanted if c in names]:
            # ignore_metadata: a structured column is stored as `struct<...>[pyarrow]`, a dtype
            # name pandas writes into the file but cannot parse back; the Arrow schema reads.
            frames.append(pq.read_table(batch, columns=present).to_pandas(ignore_metadata=True))
    frames = [f for f in frames if len(f)]
    if not frames:
        return None, ""
    return pd.concat(frames, ignore_index=True), BATCHES


def trace_stats(files: list[tuple[str, Path]]) -> TraceStats | None:
    """The kept traces' outcomes, tokens and cost, from the first Parquet output holding traces
    (the parquet sink writes success/tokens/cost columns beside each trace). None: no output
    keeps them (nemo-jsonl lines are messages only)."""
    import pyarrow.parquet as pq

    for sink, path in files:
        if path.suffix != ".parquet":
            continue
        names = set(pq.ParquetFile(path).schema_arrow.names)
        stats = TraceStats(where=f"{sink}: {path.name}")
        if set(TRACE_FIELDS) <= names:
            for row in pq.read_table(path, columns=list(TRACE_FIELDS)).to_pylist():
                stats.add(row["success"], row, row["cost_usd"])
            return stats
        if "trace" in names:
            for text in pq.read_table(path, columns=["trace"]).column("trace").to_pylist():
                trace = _json(text)
                outcome = trace.get("outcome") if isinstance(trace.get("outcome"), dict) else {}
                usage = trace.get("usage") if isinstance(trace.get("usage"), dict) else {}
                stats.add(outcome.get("success"), usage, trace.get("cost_usd"))
            return stats
    return None


def dropped_trace_stats(dropped: list[DroppedRow]) -> TraceStats | None:
    """The same for dropped rows that were traces (a failed session, a sink's refusal)."""
    stats = TraceStats(where="dropped.jsonl")
    for row in dropped:
        trace = _json((row.row or {}).get("trace"))
        if trace:
            outcome = trace.get("outcome") if isinstance(trace.get("outcome"), dict) else {}
            usage = trace.get("usage") if isinstance(trace.get("usage"), dict) else {}
            stats.add(outcome.get("success"), usage, trace.get("cost_usd"))
    return stats if stats.traces else None


def read_job(run_dir: Path) -> Mapping[str, Any] | None:
    """An orchestrator job's result, when the run dir is a job dir (it holds job.json)."""
    path = run_dir / "job.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    return doc if isinstance(doc, Mapping) else None


def chart_config(run_dir: Path) -> Mapping[str, Any] | None:
    """The saved DataDesigner config of the run's first dataset, when it has one."""
    for saved in sorted((run_dir / "datadesigner").glob("*/builder_config.json")):
        doc = json.loads(saved.read_text())
        return doc if isinstance(doc, Mapping) else None
    return None


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value[:1] == "{":
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)
