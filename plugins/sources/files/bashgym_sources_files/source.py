"""Read tabular files into seed rows with pandas/pyarrow, keeping where each row came from."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd
from bashgym_inputs import find_files
from pydantic import Field, field_validator

from bashgym.contracts import InputError, Options, RunContext, Source

READERS = {
    ".csv": lambda p: pd.read_csv(p),
    ".parquet": lambda p: pd.read_parquet(p),
    ".jsonl": lambda p: pd.read_json(p, lines=True),
    ".json": lambda p: pd.read_json(p),
}
Format = Literal["auto", "csv", "parquet", "json", "jsonl"]


class FilesOptions(Options):
    path: str = Field(description="A file, a folder (every supported file in it) or a glob.")
    format: Format = Field(default="auto", description="File format; auto goes by extension.")
    map: dict[str, str] = Field(
        default_factory=dict, description="Rename columns: new_name = existing column."
    )
    columns: list[str] | None = Field(default=None, description="Keep only these (after map).")
    provenance: bool = Field(default=True, description="Add source_file and source_row columns.")

    @field_validator("path")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a file, folder or glob")
        return value


class SourceInputError(InputError):
    """The input files are missing, unreadable or lack the mapped columns."""


class FilesSource(Source[FilesOptions]):
    """CSV, Parquet, JSON and JSONL files, a folder of them, or a glob."""

    def open(self, options: FilesOptions, run: RunContext) -> pd.DataFrame:
        frames = [self._read(path, options) for path in self._paths(options)]
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        missing = sorted(set(options.map.values()) - set(frame.columns))
        if missing:
            raise SourceInputError(
                f"files source: column(s) {missing} not found; columns are {list(frame.columns)}"
            )
        frame = frame.rename(columns={old: new for new, old in options.map.items()})
        if options.columns is not None:
            keep = options.columns + (["source_file", "source_row"] if options.provenance else [])
            frame = frame[[c for c in keep if c in frame.columns]]
        return frame

    def _paths(self, options: FilesOptions) -> list[Path]:
        found = find_files(options.path, accept=lambda p: p.suffix.lower() in READERS)
        if not found:
            raise SourceInputError(f"files source: nothing matches {options.path!r}")
        return found

    def _read(self, path: Path, options: FilesOptions) -> pd.DataFrame:
        suffix = f".{options.format}" if options.format != "auto" else path.suffix.lower()
        reader = READERS.get(suffix)
        if reader is None:
            raise SourceInputError(
                f"files source: cannot read {str(path)!r}: supported are "
                f"{', '.join(READERS)} (or set source.format)"
            )
        try:
            frame = reader(path)
        except (ValueError, OSError) as exc:
            raise SourceInputError(
                f"files source: {str(path)!r} is not valid {suffix[1:]}: {exc}"
            ) from exc
        if options.provenance:
            frame["source_file"] = str(path)
            frame["source_row"] = range(len(frame))
        return frame
