"""Write `train.jsonl`, `val.jsonl` and `manifest.json`: the files NeMo Customizer, NeMo-RL and
TRL read directly.

Why JSONL with a fixed split here rather than leaving the split to the trainer: a split made by
hashing each record's stable id is the only one that survives re-runs, resumed jobs and sources
that change their order, so validation never leaks into training. Each file is written aside and
renamed, so a crash never leaves half a file that a trainer would read as a smaller dataset.
The manifest says what was written (counts per split, the shape, the split settings and why
records were dropped, with example ids) so the output explains itself without the run dir.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pandas as pd
from bashgym_split import record_key, split_of

from bashgym import __version__
from bashgym.contracts import InputError, RunContext, Sink, Written
from bashgym.records import TRACE_COLUMN
from bashgym.text import plain
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.shapes import (
    INFERRED,
    Invalid,
    Line,
    chat_line,
    dpo_line,
    rows_line,
    trace_lines,
)

NAME = "nemo-jsonl"
FILES = {"train": "train.jsonl", "validation": "val.jsonl"}
DROP_EXAMPLES = 5


def input_shape(options: NemoJsonlOptions, output_format: str, columns: list[str]) -> str:
    """Which conversion applies; a mismatch between shape and columns is a config error (exit 2),
    not a run that drops every row one by one."""
    shape = options.input if options.input != "auto" else output_format
    if options.input == "auto" and shape not in ("traces", "chat", "dpo"):
        # "rows" is every source's default: the columns say more (e.g. a files source
        # reading a Parquet of trace rows).
        shape = _guess(columns, options) if columns else "rows"
    need = {
        "traces": [TRACE_COLUMN],
        "chat": ["messages"],
        "rows": [options.prompt_field, options.response_field],
        "dpo": [options.prompt_field, "chosen", "rejected"],
    }[shape]
    if options.min_margin is not None and shape == "dpo":
        need += [options.chosen_score_field, options.rejected_score_field]
    missing = [c for c in [*need, *options.keep_fields] if c not in columns]
    if missing and columns:
        raise InputError(
            f"{NAME}: {shape} input needs column(s) {missing}; the rows have {sorted(columns)}"
        )
    return shape


def _guess(columns: list[str], options: NemoJsonlOptions) -> str:
    have = set(columns)
    if TRACE_COLUMN in have:
        return "traces"
    if "messages" in have:
        return "chat"
    if {options.prompt_field, "chosen", "rejected"} <= have:
        return "dpo"
    if {options.prompt_field, options.response_field} <= have:
        return "rows"
    raise InputError(
        f"{NAME}: cannot tell what the rows are from columns {sorted(have)}; expected a "
        f"'trace' or 'messages' column, {options.prompt_field}/{options.response_field}, or "
        f"{options.prompt_field}/chosen/rejected (or set sink.input)"
    )


def lines_of(
    row: Mapping[str, Any], shape: str, options: NemoJsonlOptions
) -> Iterator[Line | Invalid]:
    """The training lines one row becomes (a trace may add its subagents), or why not."""
    if shape == "traces":
        status = row.get("status")  # an executor's row: a task that failed is no SFT target,
        if isinstance(status, str) and status != "success":  # and its cause is the reason
            yield Invalid(f"task {status}: {row.get('reason') or 'no reason given'}")
            return
        yield from trace_lines(row, options)
        return
    convert: Callable[[Mapping[str, Any], NemoJsonlOptions], Line] = {
        "chat": chat_line,
        "rows": rows_line,
        "dpo": dpo_line,
    }[shape]
    try:
        yield convert(row, options)
    except Invalid as exc:
        yield exc


class NemoJsonlSink(Sink[NemoJsonlOptions]):
    """NeMo / OpenAI-messages JSONL (chat or tool-use SFT, DPO) with a deterministic split."""

    def write(
        self, dataset: pd.DataFrame, options: NemoJsonlOptions, run: RunContext, output_format: str
    ) -> Written:
        shape = input_shape(options, output_format, list(dataset.columns))
        folder = Path(options.path) if options.path else run.run_dir / NAME
        folder.mkdir(parents=True, exist_ok=True)
        seed = run.seed if options.seed is None else options.seed
        counts: Counter[str] = Counter()
        key_from: Counter[str] = Counter()
        dropped: Counter[str] = Counter()
        examples: dict[str, list[str]] = defaultdict(list)
        rows_written = 0
        with _Atomic(folder, FILES.values()) as out:
            for row in dataset.to_dict(orient="records"):
                lines_before = counts["train"] + counts["validation"]
                key, where = record_key(row, options.id_field)
                key_from[where] += 1
                side = split_of(key, seed, options.val_fraction)
                for item in lines_of(row, shape, options):
                    if isinstance(item, Invalid):
                        reason = f"{NAME}: {item}"
                        run.drop(reason)
                        dropped[reason] += 1
                        if len(examples[reason]) < DROP_EXAMPLES:
                            examples[reason].append(key)
                        continue
                    if item.pop(INFERRED, 0):
                        counts["tools_inferred"] += 1
                    for name in options.keep_fields:
                        item[name] = plain(row.get(name))
                    out[FILES[side]].write(json.dumps(item, ensure_ascii=False) + "\n")
                    counts[side] += 1
                rows_written += counts["train"] + counts["validation"] > lines_before
        for split, file in FILES.items():
            run.count(f"{NAME}.{file.removesuffix('.jsonl')}", counts[split])
        if counts["tools_inferred"]:
            # Lines whose tool calls name tools the record's schema lacks (Claude Code
            # transcripts carry none): they got a minimal schema, which is worth knowing.
            run.count(f"{NAME}.tools_inferred", counts["tools_inferred"])
        manifest = {
            "writer": f"bashgym {__version__} sink {NAME}",
            "input": shape,
            "format": {"dpo": f"dpo:{options.dpo_format}", "rows": "chat"}.get(
                shape, options.format
            ),
            "files": {"train": FILES["train"], "val": FILES["validation"]},
            "counts": {"train": counts["train"], "val": counts["validation"]},
            "rows_in": len(dataset),
            "lines_with_inferred_tools": counts["tools_inferred"],
            "dropped": dict(dropped),
            "dropped_examples": dict(examples),
            "split": {
                "val_fraction": options.val_fraction,
                "seed": seed,
                "key": dict(key_from),
                "method": "blake2b(f'{seed}:{record id}') < val_fraction",
            },
        }
        target = folder / "manifest.json"
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        tmp.replace(target)
        return Written(
            [folder / FILES["train"], folder / FILES["validation"], target], rows_written
        )


class _Atomic:
    """Open `names` in `folder` as hidden temp files; rename them all into place on success,
    delete them on failure, so readers see the old files or the complete new ones."""

    def __init__(self, folder: Path, names: Any) -> None:
        self.targets = {name: folder / name for name in names}
        self.handles: dict[str, IO[str]] = {}

    def _tmp(self, target: Path) -> Path:
        return target.with_name(f".{target.name}.tmp")

    def __enter__(self) -> dict[str, IO[str]]:
        for name, target in self.targets.items():
            self.handles[name] = self._tmp(target).open("w", encoding="utf-8")
        return self.handles

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        for handle in self.handles.values():
            handle.close()
        for target in self.targets.values():
            if exc_type is None:
                self._tmp(target).replace(target)
            else:
                self._tmp(target).unlink(missing_ok=True)
