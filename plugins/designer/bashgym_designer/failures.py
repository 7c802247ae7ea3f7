"""Why rows were lost inside DataDesigner: kept per finished batch, with the model's raw answer.

DataDesigner drops a row whose cell never generates (an answer that does not parse, a timeout)
and says why only in its per-task traces, which live in memory for one `create()`; the answer
itself it never keeps. So, for every batch as it completes (and for the rest when `create()`
ends), the failures of that row group go to `bashgym-failures/rg-NNNNN.json` beside
DataDesigner's parquet files: a resumed run keeps the reasons of the batches it keeps, exactly
as it keeps their rows, and in-flight batches are regenerated and recorded anew.

The raw answers come from a thin wrapper around each model facade's `generate`/`agenerate`
(DataDesigner exposes no hook there): the parser it is given records every answer it parses,
and a call that raises leaves its last answers under (column, row group, prompt) until a retry
of the same cell succeeds. DataDesigner hands its task traces over only when `create()` ends,
so a batch's record is first made from these captured failures and then, at the end, rewritten
from the traces (which also see failures outside model calls).

Every text of a record (answers, prompts, errors, reasons, column names) is redacted by
`persist`, the one writer of these files, with the run's `run.redact`: a failed cell's answer is
model output like any row's, and no secret may reach a file in the run dir (README "Secret
scrubbing"). The answers stay raw in memory, where `RawAnswers.succeeded` compares prompts.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bashgym.records import DroppedRow

FAILURES_DIR = "bashgym-failures"
RAW_KEPT = 2  # answers kept per failed cell: the last tries are the telling ones
BATCH = re.compile(r"(\d+)")


class RawAnswers:
    """Last raw answers of the cells whose generation failed, by (column, row group)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failed: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)

    def watch(self, resources: Any) -> None:
        """Wrap every model facade the registry hands out (it makes them on first use)."""
        registry = getattr(resources, "model_registry", None)
        original = getattr(registry, "get_model", None)
        if original is None:  # a DataDesigner change: reasons still count, answers are lost
            return
        wrapped: set[int] = set()

        def get_model(*args: Any, **kwargs: Any) -> Any:
            facade = original(*args, **kwargs)
            if id(facade) not in wrapped:
                wrapped.add(id(facade))
                self._wrap(facade)
            return facade

        registry.get_model = get_model

    def _wrap(self, facade: Any) -> None:
        from data_designer.engine.observability import (
            runtime_correlation_provider,  # after prepare_environment (bashgym_designer.designer)
        )

        log = self
        original_async, original_sync = facade.agenerate, facade.generate

        def recording(parser: Any, answers: list[str]) -> Any:
            def parse(text: str) -> Any:
                answers.append(text)
                return parser(text)

            return parse

        def where() -> tuple[str, int]:
            now = runtime_correlation_provider.current()
            return (getattr(now, "task_column", None) or "?", getattr(now, "row_group", None) or 0)

        async def agenerate(prompt: str, *args: Any, parser: Any = None, **kwargs: Any) -> Any:
            answers: list[str] = []
            if parser is not None:
                kwargs["parser"] = recording(parser, answers)
            try:
                result = await original_async(prompt, *args, **kwargs)
            except Exception as exc:
                log.add(where(), prompt, answers, exc)
                raise
            log.succeeded(where(), prompt)
            return result

        def generate(prompt: str, *args: Any, parser: Any = None, **kwargs: Any) -> Any:
            answers: list[str] = []
            if parser is not None:
                kwargs["parser"] = recording(parser, answers)
            try:
                result = original_sync(prompt, *args, **kwargs)
            except Exception as exc:
                log.add(where(), prompt, answers, exc)
                raise
            log.succeeded(where(), prompt)
            return result

        facade.agenerate, facade.generate = agenerate, generate

    def add(self, key: tuple[str, int], prompt: str, answers: list[str], exc: Exception) -> None:
        record = {"prompt": prompt, "raw_output": answers[-RAW_KEPT:], "error": str(exc)}
        with self._lock:
            self.failed[key].append(record)

    def succeeded(self, key: tuple[str, int], prompt: str) -> None:
        """A retried cell that generated after all is no longer a failure."""
        with self._lock:
            records = self.failed.get(key, [])
            for i, record in enumerate(records):
                if record["prompt"] == prompt:
                    del records[i]
                    break

    def take(self, row_group: int | None = None) -> dict[str, list[dict[str, Any]]]:
        """Records per column, of one row group (or all), removed from the log."""
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        with self._lock:
            for column, rg in list(self.failed):
                if row_group is None or rg == row_group:
                    out[column] += self.failed.pop((column, rg))
        return out


def row_group_of(batch_file: Path) -> int:
    match = BATCH.findall(batch_file.stem)
    return int(match[-1]) if match else 0


def persist(
    dataset_dir: Path,
    row_group: int,
    failures: Counter[tuple[str, str]],
    raw: dict[str, list],
    redact: Callable[[str], str] | None = None,
) -> None:
    """The failures of one finished row group, written once (a rewrite only adds detail),
    every text in them passed through `redact` (the run's `run.redact`)."""
    folder = Path(dataset_dir) / FAILURES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "failures": [[column, reason, n] for (column, reason), n in sorted(failures.items())],
        "raw": raw,
    }
    text = json.dumps(doc, default=str)
    tmp = folder / f".rg-{row_group:05d}.json.tmp"
    tmp.write_text(redact(text) if redact is not None else text)  # (JSON text stays JSON)
    tmp.replace(folder / f"rg-{row_group:05d}.json")


def load(dataset_dir: Path) -> tuple[Counter[tuple[str, str]], list[DroppedRow]]:
    """Every recorded failure of the dataset: counts by (column, reason), and one DroppedRow
    per failed cell with its prompt, full error and raw answers (as many as were captured)."""
    counts: Counter[tuple[str, str]] = Counter()
    rows: list[DroppedRow] = []
    from bashgym_designer.designer import failure_reason  # designer imports this module

    for path in sorted((Path(dataset_dir) / FAILURES_DIR).glob("rg-*.json")):
        doc = json.loads(path.read_text())
        raw = {column: list(records) for column, records in (doc.get("raw") or {}).items()}
        for column, reason, n in doc.get("failures") or []:
            counts[(column, reason)] += n
            pool = raw.get(column, [])
            for _ in range(n):  # the answers behind this reason first, else what is left
                match = next((r for r in pool if failure_reason(r.get("error")) == reason), None)
                row = match or (pool[0] if pool else {})
                if row:
                    pool.remove(row)
                rows.append(DroppedRow(f"pipeline column {column}", reason, row))
    return counts, rows
