"""Read tabular files into seed rows with pandas/pyarrow, keeping where each row came from.

Why the JSONL reader is our own: pandas reads a JSONL file whole or not at all, and says where
it failed by byte position. A file written by hand or cut off mid-write would then stop the run
over one line, where the prompts source skips it. So each line is checked on its own: a bad one
is counted (`source.bad_lines`), noted as `file:LINE: reason` (the first MAX_NOTES) and skipped;
pandas reads the good ones, as before. A file with rows but no good line is an error naming it.

A file with no rows (an empty JSONL, a CSV with its header only) is an error of its own when it
is the only input; among several it is counted (`source.empty_files`), noted and skipped, so
one empty export in a folder does not stop the run (without that, a sink saw only the
provenance columns and blamed them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Literal

import pandas as pd
from bashgym_inputs import find_files, require_input
from pydantic import Field, field_validator

from bashgym.contracts import InputError, Options, RunContext, Source

Format = Literal["auto", "csv", "parquet", "json", "jsonl"]
PROVENANCE = ["source_file", "source_row"]
MAX_NOTES = 10
"""Bad lines noted by file and line; the rest are counted, and one closing note says how many."""


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
        require_input(value)
        return value


class SourceInputError(InputError):
    """The input files are missing, unreadable or lack the mapped columns."""


class BadLines:
    """Counts every unusable JSONL line of the run and notes the first MAX_NOTES."""

    def __init__(self, run: RunContext) -> None:
        self.run, self.count = run, 0

    def __call__(self, path: Path, number: int, reason: str) -> None:
        self.count += 1
        self.run.count("source.bad_lines")
        if self.count <= MAX_NOTES:
            self.run.note(f"{path}:{number}: {reason}")

    def close(self) -> None:
        if self.count > MAX_NOTES:
            self.run.note(
                f"files source: {self.count - MAX_NOTES} more bad lines not listed "
                f"({self.count} in all, counted as source.bad_lines)"
            )


Parsed = tuple[pd.DataFrame | None, list[int] | None]
"""A file's rows (None: it has none), and each row's 0-based data row when that is not its
position (a JSONL file's bad lines keep their place in the count)."""


def _read_jsonl(path: Path, bad: BadLines) -> Parsed:
    good: list[str] = []
    rows: list[int] = []
    total = 0  # non-blank lines (data rows), good or bad
    first = ""  # the first bad line's number and reason
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            total += 1
            reason = _line_problem(raw)
            if reason is not None:
                bad(path, number, reason)
                first = first or f"line {number}: {reason}"
                continue
            good.append(raw.decode("utf-8"))
            rows.append(total - 1)
    if not good:
        if total:
            raise ValueError(f"none of its {total} lines is a JSON object ({first})")
        return None, None
    return pd.read_json(StringIO("".join(good)), lines=True), rows


def _line_problem(raw: bytes) -> str | None:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:  # (its own line and char would count from the line)
        return f"invalid JSON ({exc.msg}, column {exc.colno})"
    except ValueError:
        return "not UTF-8 text"
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    return None


READERS: dict[str, Callable[[Path, BadLines], Parsed]] = {
    ".csv": lambda path, _: (pd.read_csv(path), None),
    ".parquet": lambda path, _: (pd.read_parquet(path), None),
    ".jsonl": _read_jsonl,
    ".json": lambda path, _: (pd.read_json(path), None),
}


class FilesSource(Source[FilesOptions]):
    """CSV, Parquet, JSON and JSONL files, a folder of them, or a glob."""

    def open(self, options: FilesOptions, run: RunContext) -> pd.DataFrame:
        frame = self._frames(self._paths(options), options, run)
        columns = [c for c in frame.columns if c not in PROVENANCE or not options.provenance]
        missing = sorted(set(options.map.values()) - set(frame.columns))
        if missing:
            raise SourceInputError(
                f"files source: column(s) {missing} not found; columns are {columns}"
            )
        frame = frame.rename(columns={old: new for new, old in options.map.items()})
        if options.columns is not None:
            frame = self._keep(frame, options.columns, options.provenance)
        return frame

    @staticmethod
    def _keep(frame: pd.DataFrame, columns: list[str], provenance: bool) -> pd.DataFrame:
        """Only `columns` (and provenance): a name the rows lack is an error, not a column
        quietly left out (a typo would drop the column the run needed)."""
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            have = [c for c in frame.columns if c not in PROVENANCE or not provenance]
            raise SourceInputError(
                f"files source: source.columns names column(s) {missing} the rows do not have"
                f" (after --map); columns are {have}"
            )
        return frame[list(dict.fromkeys(columns + (PROVENANCE if provenance else [])))]

    def _frames(self, paths: list[Path], options: FilesOptions, run: RunContext) -> pd.DataFrame:
        """Every file's rows, one frame; files with no rows skipped among several."""
        bad = BadLines(run)
        frames, empty = [], []
        try:
            for path in paths:
                frame = self._read(path, options, bad)
                if frame is None:
                    empty.append(path)
                    continue
                run.count("source.files")
                frames.append(frame)
        finally:
            bad.close()
        if len(paths) == 1 and empty:
            raise SourceInputError(
                f"files source: {str(paths[0])!r} has no rows (an empty file, or a header only)"
            )
        if not frames:
            raise SourceInputError(
                f"files source: none of the {len(paths)} files matching {options.path!r} has rows"
            )
        for path in empty:
            run.count("source.empty_files")
            run.note(f"{path}: no rows, skipped")
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    def _paths(self, options: FilesOptions) -> list[Path]:
        found = find_files(options.path, accept=lambda p: p.suffix.lower() in READERS)
        if not found:
            raise SourceInputError(f"files source: nothing matches {options.path!r}")
        return found

    def _read(self, path: Path, options: FilesOptions, bad: BadLines) -> pd.DataFrame | None:
        """The file's rows (None: it has none), provenance added."""
        suffix = f".{options.format}" if options.format != "auto" else path.suffix.lower()
        if suffix not in READERS:
            raise SourceInputError(
                f"files source: cannot read {str(path)!r}: supported are "
                f"{', '.join(READERS)} (or set source.format)"
            )
        try:
            frame, rows = READERS[suffix](path, bad)
        except pd.errors.EmptyDataError:  # a CSV of zero bytes (not even a header)
            return None
        except (ValueError, OSError) as exc:
            raise SourceInputError(
                f"files source: {str(path)!r} is not valid {suffix[1:]}: {exc}"
            ) from exc
        if frame is None or len(frame) == 0:
            return None
        if options.provenance:
            frame["source_file"] = str(path)
            frame["source_row"] = rows if rows is not None else range(len(frame))
        return frame
