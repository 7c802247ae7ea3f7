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
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pandas as pd
from bashgym_split import Split, loadable, record_key, score, split_of
from bashgym_split.places import row_place

from bashgym import __version__
from bashgym.contracts import InputError, RunContext, Sink, SinkStream, Written
from bashgym.records import TRACE_COLUMN
from bashgym.text import plain
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.shapes import (
    CUT_SHORT,
    INFERRED,
    NEGATIVE,
    SUBAGENT,
    Invalid,
    Line,
    NoNegative,
    chat_line,
    dpo_line,
    rows_line,
    trace_lines,
)

NAME = "nemo-jsonl"
BY = f"sink {NAME}"  # who drops, as every sink says it (`sink atif`): the report's stage
FILES = {"train": "train.jsonl", "validation": "val.jsonl"}
NEGATIVES = "negatives.jsonl"  # failed traces' lines: never SFT targets, kept for DPO rejected
DROP_EXAMPLES = 5
NOT_TRAINING_TEXT = ("triplets",)  # output formats with no prompt and answer to train on
JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


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
    if options.prompt_field in have:  # a task list (-s prompts): questions with no answers yet
        raise InputError(
            f"{NAME}: the rows are prompts with no answers ({options.prompt_field!r}, no "
            f"{options.response_field!r}): nothing to train on yet. Answer them first with a "
            "pipeline (-p coding-agent-sft) or an executor (-x student), or name the answer "
            "column with --set sink.response_field=COLUMN"
        )
    raise InputError(
        f"{NAME}: cannot tell what the rows are from columns {sorted(have)}; expected a "
        f"'trace' or 'messages' column, {options.prompt_field}/{options.response_field}, or "
        f"{options.prompt_field}/chosen/rejected (or set sink.input)"
    )


def lines_of(
    row: Mapping[str, Any], shape: str, options: NemoJsonlOptions
) -> Iterator[Line | Invalid | NoNegative]:
    """The training lines one row becomes (a trace may add its subagents), or why not."""
    if shape == "traces":
        status = row.get("status")  # an executor's row: a task that failed is no SFT target,
        failed = None  # and its cause is the reason
        if isinstance(status, str) and status != "success":
            failed = f"task {status}: {row.get('reason') or 'no reason given'}"
        yield from trace_lines(row, options, failed)
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
        out = self.stream(options, run, output_format)
        try:
            out.add(dataset)
        except BaseException:
            out.discard()
            raise
        return out.close()

    def stream(
        self, options: NemoJsonlOptions, run: RunContext, output_format: str
    ) -> NemoJsonlStream:
        return NemoJsonlStream(options, run, output_format)

    def refuses(self, options: NemoJsonlOptions, output_format: str) -> str | None:
        """A format known to hold no training text (code-graph-pairs' `triplets`), unless the
        user says which columns to read: refused before the run, not after its generation. Any
        other format (a third party's) is read by its columns, as `input=auto` does."""
        told = (
            options.input != "auto" or {"prompt_field", "response_field"} & options.model_fields_set
        )
        if output_format not in NOT_TRAINING_TEXT or told:
            return None
        return (
            f"it writes traces, chat messages, DPO pairs or prompt/response rows, and this run "
            f"makes {output_format!r} rows: write those with -k parquet or -k hf-hub, or name "
            "the columns to train on with --set sink.input=rows --set sink.prompt_field=COLUMN "
            "--set sink.response_field=COLUMN"
        )


class NemoJsonlStream(SinkStream):
    """The files written as batches come: each row's lines go to its split's file at once (the
    split is by each record's own key), so memory holds one batch and a small note per record;
    the split's repair, the counts and the manifest come at `close`."""

    def __init__(self, options: NemoJsonlOptions, run: RunContext, output_format: str) -> None:
        self.options, self.run, self.output_format = options, run, output_format
        self.shape: str | None = None  # from the first batch's columns
        self.folder = Path(options.path) if options.path else run.run_dir / NAME
        self.folder.mkdir(parents=True, exist_ok=True)
        self.seed = run.seed if options.seed is None else options.seed
        self.counts: Counter[str] = Counter()
        self.key_from: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = defaultdict(list)
        self.no_negative: Counter[str] = Counter()  # dropped traces with no negative line: why
        self.records: list[_Record] = []  # the records that wrote lines, for the split's repair
        self.rows_in = 0
        self.out = _Atomic(self.folder, [*FILES.values(), NEGATIVES]).__enter__()

    def add(self, batch: pd.DataFrame) -> None:
        options, run, out = self.options, self.run, self.out
        if self.shape is None and (len(batch.columns) or len(batch)):
            self.shape = input_shape(options, self.output_format, list(batch.columns))
        self.rows_in += len(batch)
        for row in batch.to_dict(orient="records"):
            key, where = record_key(row, options.id_field)
            self.key_from[where] += 1
            side = split_of(key, self.seed, options.val_fraction)
            file = FILES[side]
            record = _Record(key, side, score(key, self.seed), out.lines[file])
            for item in lines_of(row, self.shape or "rows", options):
                if isinstance(item, NoNegative):
                    self.no_negative[item.reason] += 1
                    continue
                if isinstance(item, Invalid):
                    run.drop(str(item), by=BY, row_id=row_id(row, key))
                    reason = f"{BY}: {item}"  # as run.json keys it, so one greps the other
                    self.dropped[reason] += 1
                    if len(self.examples[reason]) < DROP_EXAMPLES:
                        self.examples[reason].append(key)
                    continue
                if item.pop(INFERRED, 0):
                    self.counts["tools_inferred"] += 1
                subagent = item.pop(SUBAGENT, False)
                for name in options.keep_fields:
                    item[name] = plain(row.get(name))
                cut = item.pop(CUT_SHORT, False)
                if item.pop(NEGATIVE, False):
                    out.write(NEGATIVES, item)
                    self.counts["negatives"] += 1
                    self.counts["negatives_cut_short"] += int(cut)
                    continue
                out.write(file, item)
                record.lines += 1
                self.counts["subagent_lines"] += int(subagent)
            if record.lines:
                self.records.append(record)

    def discard(self) -> None:
        self.out.__exit__(RuntimeError, None, None)  # temp files removed, old files kept

    def close(self) -> Written:
        options, run, out, counts, records = (
            self.options, self.run, self.out, self.counts, self.records
        )  # fmt: skip
        try:
            sides = loadable([r.side for r in records], [r.score for r in records],
                             options.val_fraction)  # fmt: skip
            moved = [r for r, new in zip(records, sides, strict=True) if new != r.side]
            for record in moved:
                record.side = "validation" if record.side == "train" else "train"
            out.move({FILES[r.side]: r for r in moved})
        except BaseException:
            self.discard()
            raise
        out.__exit__(None, None, None)
        for split, file in FILES.items():
            counts[split] = out.lines[file]
            run.count(f"{NAME}.{file.removesuffix('.jsonl')}", counts[split])
        if counts["tools_inferred"]:
            # Lines whose tool calls name tools the record's schema lacks (Claude Code
            # transcripts carry none): they got a minimal schema, which is worth knowing.
            run.count(f"{NAME}.tools_inferred", counts["tools_inferred"])
        if counts["negatives"]:
            run.count(f"{NAME}.negatives", counts["negatives"])
        if self.no_negative:
            run.count(f"{NAME}.negatives_not_written", self.no_negative.total())
        if counts["subagent_lines"]:
            run.count(f"{NAME}.subagent_lines", counts["subagent_lines"])
        present = {split: file for split, file in FILES.items() if out.lines[file]}
        shape = self.shape or input_shape(options, self.output_format, [])
        manifest = {
            "writer": f"bashgym {__version__} sink {NAME}",
            "input": shape,
            "format": {"dpo": f"dpo:{options.dpo_format}", "rows": "chat"}.get(
                shape, options.format
            ),
            "tool_arguments": options.tool_arguments,
            # `None`: no file, so `data_files` must leave that split out (an empty file
            # breaks `datasets.load_dataset`); `split.note` says why.
            "files": {"train": present.get("train"), "val": present.get("validation")},
            "counts": {"train": counts["train"], "val": counts["validation"]},
            "negatives": {
                "file": NEGATIVES if counts["negatives"] else None,
                "lines": counts["negatives"],
                "what": "lines of traces that did not succeed (not SFT targets): DPO rejected "
                "answers or failure analysis",
                # of `lines`: traces stopped mid-action, cut after their last assistant turn,
                # which may end on tool calls with no result (the action they were stopped at)
                "cut_short": counts["negatives_cut_short"],
                "not_written": dict(self.no_negative),  # dropped traces with no line: why
            },
            "rows_in": self.rows_in,
            "records": len(records),  # rows that became train/val lines
            "lines_from_subagents": counts["subagent_lines"],  # of those in counts
            "lines_with_inferred_tools": counts["tools_inferred"],
            "dropped": dict(self.dropped),
            "dropped_examples": dict(self.examples),
            "split": {
                "val_fraction": options.val_fraction,
                "seed": self.seed,
                "key": dict(self.key_from),
                "method": "blake2b(f'{seed}:{record id}') < val_fraction; with 2 or more "
                "records neither split is left empty (the nearest record moves)",
                "moved": [r.key for r in moved],
                "note": _split_note(len(records), options.val_fraction),
            },
        }
        target = self.folder / "manifest.json"
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        tmp.replace(target)
        files = [self.folder / f for f in (*present.values(), NEGATIVES) if out.lines[f]]
        # The lines written, not the records: with subagents a record writes several, and
        # "kept" must be what a trainer reads (negatives are dropped rows, not kept ones).
        return Written([*files, target], counts["train"] + counts["validation"])


def row_id(row: Mapping[str, Any], key: str) -> str:
    """Where a user finds a dropped row (`bashgym_split.row_place`), else its id."""
    return row_place(row) or key


def _split_note(records: int, val_fraction: float) -> str | None:
    if records == 0:
        return "nothing written: no record became a training line (see dropped)"
    if val_fraction <= 0:
        return "no validation file: val_fraction is 0"
    if records == 1:
        return "no validation file: one record, kept for train"
    return None


@dataclass
class _Record:
    """Where one record's lines went: `first` is the index of its first line in its file."""

    key: str
    side: Split
    score: float
    first: int
    lines: int = 0


class _Atomic:
    """Open `names` in `folder` as hidden temp files; on success rename the ones that hold
    lines into place and remove the rest (an empty file breaks loaders; a stale one from an
    earlier write would be read as this one's), on failure delete them, so readers see the
    old files or the complete new ones."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self.targets = {name: folder / name for name in names}
        self.handles: dict[str, BinaryIO] = {}
        self.lines: Counter[str] = Counter()

    def _tmp(self, name: str) -> Path:
        """This writer's own temp file: two writers of one folder (an orchestrator job writing
        its sinks as it goes while the run's stream fills its own) never share one."""
        target = self.targets[name]
        return target.with_name(f".{target.name}.{os.getpid()}-{id(self):x}.tmp")

    def __enter__(self) -> _Atomic:
        for name in self.targets:
            self.handles[name] = self._tmp(name).open("wb")  # UTF-8, as orjson writes it
        return self

    def write(self, name: str, item: Mapping[str, Any]) -> None:
        # orjson, not json.dumps: a fifth of the sink's time went to the stdlib encoder (the
        # same UTF-8 text, compact; NaN becomes null where json.dumps wrote invalid JSON); its
        # bytes as they are: decoding them for a text file that encodes them again cost more
        self.handles[name].write(orjson.dumps(item, option=JSON_OPTIONS))  # one line each
        self.lines[name] += 1

    def move(self, records: Mapping[str, _Record]) -> None:
        """Move each record's lines into the file it is keyed by (the split's repair; rare, so
        a streamed rewrite of the file they leave, not a second copy of every line kept)."""
        for to, record in records.items():
            src = next(n for n in FILES.values() if n != to)
            self.handles[src].close()
            rest = self._tmp(src).with_suffix(".rest")
            with self._tmp(src).open("rb") as lines, rest.open("wb") as keep:
                for i, line in enumerate(lines):
                    if record.first <= i < record.first + record.lines:
                        self.handles[to].write(line)
                    else:
                        keep.write(line)
            rest.replace(self._tmp(src))
            self.handles[src] = self._tmp(src).open("ab")
            self.lines[src] -= record.lines
            self.lines[to] += record.lines

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        for handle in self.handles.values():
            handle.close()
        for name, target in self.targets.items():
            if exc_type is None and self.lines[name]:
                self._tmp(name).replace(target)
            else:
                self._tmp(name).unlink(missing_ok=True)
                if exc_type is None:
                    target.unlink(missing_ok=True)
