"""Write a dataset folder in HuggingFace Hub layout and push it when, and only when, asked to.

Layout: `data/train-00000-of-0000N.parquet` (and `validation-…`), or `.jsonl`, plus a generated
README.md whose YAML `configs` block maps files to splits, so `datasets.load_dataset(folder)` and
the Hub viewer read it as-is. The split is the same deterministic id hash as the nemo-jsonl
sink's, so a record is in the same split in every output of a run.

Why push only with both `repo_id` and a token from the env var named by `token_env`: publishing
is irreversible, and a run must work offline by default; without both it is a dry run that says
what would have been pushed. The token is read from the environment at push time and handed to
`huggingface_hub` directly — never logged, never written to the card, run.toml or run.json.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bashgym_split import loadable, record_key, score, split_of
from bashgym_split.arrow import arrow_table, note

from bashgym.contracts import RunContext, Sink, Written
from bashgym.records import TRACE_COLUMN
from bashgym.text import plain
from bashgym_sinks_hf_hub.card import render
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.paths import shorten_frame, shortened
from bashgym_sinks_hf_hub.rows import features, trace_rows

NAME = "hf-hub"
BY = f"sink {NAME}"  # who drops, as every sink says it (`sink nemo-jsonl`): the report's stage
SPLITS = ("train", "validation")


def default_folder(run_dir: Path) -> Path:
    """`RUN_DIR/hf-<run dir name>`: `datasets` names a local dataset (and its cache entry) after
    the folder, so two runs' folders must not share one name or they load as the same dataset."""
    return run_dir / f"hf-{run_dir.resolve().name}"


class HfHubSink(Sink[HfHubOptions]):
    """A Hub dataset folder (data shards + dataset card), pushed given a repo id and a token."""

    def write(
        self, dataset: pd.DataFrame, options: HfHubOptions, run: RunContext, output_format: str
    ) -> Written:
        folder = Path(options.path) if options.path else default_folder(run.run_dir)
        data_dir = folder / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        seed = run.seed if options.seed is None else options.seed
        rows = dataset.to_dict(orient="records")
        traces = TRACE_COLUMN in dataset.columns
        if traces:  # rows carry a Trace: Hub rows carry its conversation, ready for TRL
            kept, hub_rows = [], []
            for row, out in trace_rows(rows, options):
                if isinstance(out, str):
                    # named in run.json: its file, else its id as nemo-jsonl names it
                    where = plain(row.get("source_file")) or record_key(row, options.id_field)[0]
                    run.drop(out, by=BY, row_id=str(where))
                    continue
                kept.append(row)
                hub_rows.append(out)
            rows = kept
        key_from: Counter[str] = Counter()
        keys = []
        for row in rows:
            key, where = record_key(row, options.id_field)
            key_from[where] += 1
            keys.append(key)
        sides = loadable(
            [split_of(k, seed, options.val_fraction) for k in keys],
            [score(k, seed) for k in keys],
            options.val_fraction,
        )
        ext = options.file_format
        if traces:
            parts = {s: [r for r, side in zip(hub_rows, sides, strict=True) if side == s]
                     for s in SPLITS}  # fmt: skip
            writer: _TraceShards | _TableShards = _TraceShards(hub_rows, options)
        else:
            # One Arrow schema for every shard: a column that is all null in one split would
            # otherwise get type null there and clash with the other split's files on load.
            # A column Arrow cannot type (text and numbers, say) is stored as text and noted.
            # Local paths are cut to their name (paths.py); the keys above came from the rows
            # as they are, so a record's split is the one nemo-jsonl gives it.
            typed = arrow_table(shorten_frame(dataset))
            if said := note(NAME, typed.converted):
                run.note(said)
            table = typed.table
            mask = {s: pa.array([x == s for x in sides], type=pa.bool_()) for s in SPLITS}
            parts = {s: table.filter(mask[s]) for s in SPLITS}
            writer = _TableShards(table)
        written: list[Path] = []
        splits: dict[str, int] = {}
        for split in SPLITS:
            n = len(parts[split]) if traces else parts[split].num_rows
            if n == 0:
                continue  # no empty split: load_dataset fails on an empty file
            splits[split] = n
            run.count(f"{NAME}.{split}", n)
            shards = max(1, math.ceil(n / options.max_shard_rows))
            for i in range(shards):
                target = data_dir / f"{split}-{i:05d}-of-{shards:05d}.{ext}"
                lo = i * options.max_shard_rows
                written.append(writer.write(parts[split], lo, options.max_shard_rows, target, ext))
        _remove_stale(data_dir, written)
        card = render(
            options,
            run,
            "traces" if traces else output_format,
            splits,
            {s: f"data/{s}-*.{ext}" for s in splits},
            dict(key_from),
            seed,
            # JSON files carry no schema: each split's reader would guess its own, and a column
            # null in one split's rows only would clash with the other split's values on load
            writer.features() if ext == "jsonl" and splits else None,
            shortened=shortened(list(dataset.columns)),
        )
        readme = folder / "README.md"
        _atomic_text(readme, run.redact(card))  # uploaded on push: no secret from an option
        _push_or_say(folder, options, run, written)
        return Written([*written, readme], sum(splits.values()))


class _TableShards:
    """Slices of an Arrow table (rows as the pipeline made them)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def features(self) -> Any:
        """The `datasets.Features` of the rows as the JSONL files hold them, over all rows."""
        import datasets  # ~0.6 s (measured): only when the card declares JSONL features

        schema = pa.schema([f.with_type(_as_json(f.type)) for f in self.table.schema])
        return datasets.Features.from_arrow_schema(schema)

    def write(self, part: pa.Table, lo: int, n: int, target: Path, ext: str) -> Path:
        return _write(part.slice(lo, n), target, ext)


class _TraceShards:
    """Slices of Hub rows with `messages` / `tools`, typed once for every shard (rows.py)."""

    def __init__(self, rows: list[dict], options: HfHubOptions) -> None:
        self.rows, self.options, self._features = rows, options, None

    def features(self) -> Any:
        if self._features is None:
            self._features = features(self.rows, self.options)
        return self._features

    def write(self, part: list[dict], lo: int, n: int, target: Path, ext: str) -> Path:
        chunk = part[lo : lo + n]
        tmp = target.with_name(f".{target.name}.tmp")
        if ext == "jsonl":  # `datasets`' JSON reader types differing objects as Json itself
            with tmp.open("w", encoding="utf-8") as out:
                for row in chunk:
                    out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        else:
            import datasets  # ~0.6 s (measured): only when trace rows are written as Parquet

            table = datasets.Dataset.from_list(chunk, features=self.features()).data.table
            pq.write_table(table, tmp, compression="zstd")  # its schema carries the features
        tmp.replace(target)
        return target


def _write(table: pa.Table, target: Path, ext: str) -> Path:
    tmp = target.with_name(f".{target.name}.tmp")
    if ext == "parquet":
        pq.write_table(table, tmp, compression="zstd")
    else:
        with tmp.open("w", encoding="utf-8") as out:
            for row in table.to_pylist():
                out.write(json.dumps(plain(row), ensure_ascii=False, default=str) + "\n")
    tmp.replace(target)
    return target


def _as_json(kind: pa.DataType) -> pa.DataType:
    """The type a JSONL file holds for `kind`: times, decimals and bytes are written as text
    (`plain`, then `default=str`), so the card must not declare them as Arrow has them."""
    if pa.types.is_struct(kind):
        return pa.struct([kind.field(i).with_type(_as_json(kind.field(i).type))
                          for i in range(kind.num_fields)])  # fmt: skip
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(_as_json(kind.value_type))
    if pa.types.is_dictionary(kind):
        return _as_json(kind.value_type)
    textual = (
        pa.types.is_temporal(kind) or pa.types.is_decimal(kind) or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
    )  # fmt: skip
    return pa.string() if textual else kind


def _atomic_text(target: Path, text: str) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)


def _remove_stale(data_dir: Path, written: list[Path]) -> None:
    """Shards of an earlier write into the same folder would be read as part of this dataset."""
    keep = set(written)
    for split in SPLITS:
        for old in data_dir.glob(f"{split}-*-of-*.*"):
            if old not in keep:
                old.unlink()


def _push_or_say(folder: Path, options: HfHubOptions, run: RunContext, files: list[Path]) -> None:
    token = os.environ.get(options.token_env) or None
    if options.repo_id and token:
        from huggingface_hub import HfApi  # ~0.18 s (measured): only when pushing to the Hub

        api = HfApi()
        api.create_repo(
            options.repo_id,
            repo_type="dataset",
            private=options.private,
            exist_ok=True,
            token=token,
        )
        api.upload_folder(
            repo_id=options.repo_id,
            folder_path=str(folder),
            repo_type="dataset",
            token=token,
            commit_message=options.commit_message or f"BashGym run {run.run_dir.name}",
        )
        run.count(f"{NAME}.pushed")
        said = f"{NAME}: pushed {folder} to https://huggingface.co/datasets/{options.repo_id}"
    else:
        missing = " and ".join(
            what
            for what, ok in (("sink.repo_id", options.repo_id), (f"${options.token_env}", token))
            if not ok
        )
        said = (
            f"{NAME}: dry run, nothing pushed ({missing} not set); would upload "
            f"{len(files) + 1} files from {folder} to dataset repo {options.repo_id or '<repo_id>'}"
        )
    # once, through the run's events: redacted there, and shown by the terminal display as
    # a `note:` line (a print of its own would show it twice, the second time unredacted)
    run.note(said)
