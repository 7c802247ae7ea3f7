"""The `atif` source: ATIF trajectory files (Harbor / Terminal-Bench) as normalized Traces.

Why it is this thin: the conversion lives in `convert`, shared with the `atif` sink, so
reading and writing stay lossless inverses. The source only finds the files and keeps
one bad file from spoiling a folder of good ones: an invalid document is counted, noted with
the converter's exact message, and skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import Field, field_validator

from bashgym.contracts import InputError, Options, RunContext, Source
from bashgym.inputs import find_files
from bashgym.records import Trace
from bashgym_formats_atif.convert import load_atif


class AtifOptions(Options):
    path: str = Field(description="An ATIF .json file, a folder (searched recursively) or a glob.")
    pattern: str = Field(
        default="*.json",
        description="File name pattern in a folder (e.g. trajectory.json for Harbor jobs).",
    )

    @field_validator("path", "pattern")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class AtifInputError(InputError):
    """No ATIF files where the user pointed, or none of them valid."""


def find_documents(path: str, pattern: str = "*.json") -> list[Path]:
    found = find_files(path, pattern=pattern)
    if not found:
        where = f"{path} (pattern {pattern})" if Path(path).expanduser().is_dir() else path
        raise AtifInputError(f"atif source: no files match {where}")
    return found


class AtifSource(Source):
    """ATIF trajectory JSON files (one, a folder or a glob), one Trace per document."""

    Options = AtifOptions
    output_format = "traces"

    def open(self, options: AtifOptions, run: RunContext) -> Iterator[Trace]:
        return self._traces(find_documents(options.path, options.pattern), run)

    def _traces(self, paths: list[Path], run: RunContext) -> Iterator[Trace]:
        problems: list[str] = []
        for path in paths:
            try:
                trace = load_atif(path)
            except (ValueError, OSError) as exc:  # UnicodeDecodeError is a ValueError
                problems.append(f"{path}: {exc}")
                run.count("source.invalid_files")
                run.notes.append(problems[-1])
                continue
            run.count("source.files")
            yield trace
        if problems and len(problems) == len(paths):
            raise AtifInputError(
                f"atif source: none of {len(paths)} file(s) is a valid ATIF document; "
                f"first: {problems[0]}"
            )
