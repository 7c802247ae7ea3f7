"""The `huggingface` source: options, column mapping and provenance around `loader`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from bashgym.contracts import Options, RunContext, Source
from bashgym_sources_huggingface.loader import DatasetInputError, load_frame, only_local

NOT_THERE = "does not exist, and is not a Hub id like 'openai/gsm8k'"


class HuggingFaceOptions(Options):
    path: str = Field(
        description=(
            "A Hub id (openai/gsm8k), or a local dataset: a save_to_disk folder, a folder of "
            "parquet/json/csv files, or one such file."
        )
    )
    split: str = Field(default="train", description="Split to read (slices like train[:100] too).")
    subset: str | None = Field(
        default=None, description="Config name (e.g. main for gsm8k); locally also a sub-folder."
    )
    map: dict[str, str] = Field(
        default_factory=dict, description="Rename columns: new_name = existing column."
    )
    columns: list[str] | None = Field(default=None, description="Keep only these (after map).")
    limit: int | None = Field(default=None, ge=1, description="Read at most this many rows.")
    streaming: bool = Field(
        default=False, description="Stream rows instead of preparing the whole split first."
    )
    cache_dir: str | None = Field(
        default=None, description="Where datasets caches prepared data; default: HF's cache."
    )
    provenance: bool = Field(default=True, description="Add source_dataset and source_row columns.")

    @field_validator("path")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a Hub id or a local dataset folder or file")
        return value

    @field_validator("path")
    @classmethod
    def _local_exists(cls, value: str) -> str:
        """A path that can only be local and is not there is refused when the run is resolved,
        before a run folder exists (open() checks again); a Hub id is left to open()."""
        if only_local(value) and not Path(value).expanduser().exists():
            raise PydanticCustomError("path_missing", NOT_THERE)
        return value


class HuggingFaceSource(Source[HuggingFaceOptions]):
    """HuggingFace datasets: a Hub id, or a local dataset folder or file."""

    def open(self, options: HuggingFaceOptions, run: RunContext) -> pd.DataFrame:
        wanted = None
        if options.columns is not None:  # read only what the output needs
            renamed = {new: old for new, old in options.map.items()}
            wanted = list(dict.fromkeys(renamed.get(c, c) for c in options.columns))
            wanted += [old for old in options.map.values() if old not in wanted]
        frame = load_frame(
            options.path,
            split=options.split,
            subset=options.subset,
            streaming=options.streaming,
            limit=options.limit,
            columns=wanted,
            cache_dir=options.cache_dir,
        )
        missing = sorted(set(options.map.values()) - set(frame.columns))
        if missing:
            raise DatasetInputError(
                f"huggingface source: column(s) {missing} not found; "
                f"columns are {list(frame.columns)}"
            )
        frame = frame.rename(columns={old: new for new, old in options.map.items()})
        if options.columns is not None:
            absent = [c for c in options.columns if c not in frame.columns]
            if absent:
                raise DatasetInputError(
                    f"huggingface source: column(s) {absent} not found; "
                    f"columns are {list(frame.columns)}"
                )
            frame = frame[options.columns]
        if options.provenance:
            name = options.path + (f":{options.subset}" if options.subset else "")
            frame["source_dataset"] = f"{name}[{options.split}]"
            frame["source_row"] = range(len(frame))
        return frame
