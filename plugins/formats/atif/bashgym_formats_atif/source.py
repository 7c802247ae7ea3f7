"""The `atif` source: ATIF trajectory files (Harbor / Terminal-Bench) as normalized Traces.

Why it is this thin: the conversion lives in `convert`, shared with the `atif` sink, so
reading and writing stay lossless inverses. The source only finds the files and keeps
one bad file from spoiling a folder of good ones: an invalid document is counted, noted with
the converter's exact message, and skipped.

A trajectory another document names in a `subagent_trajectory_ref` (Harbor's summarization
agents, delegated subagents) is read as a subagent nested in that document's trace, never as a
sample of its own: the files are scanned for references first, and the referenced ones are
skipped at the top level (`source.subagent_files`). A reference to a file that is not there is
counted (`source.unresolved_subagents`) and noted.

The `atif` sink writes a `manifest.json` beside its trajectories; a folder it wrote is the
natural input of a later run, so that file (known by its name and shape: a JSON object of file
lists, no `steps`) is skipped and counted (`source.sink_manifests`), not noted as a bad document
the user has to look into. Any other file that is not ATIF is still noted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bashgym_inputs import find_files, require_input
from pydantic import Field, field_validator

from bashgym.contracts import InputError, Options, RunContext, Source
from bashgym.records import Trace
from bashgym_formats_atif.convert import load_atif, referenced_files, resolve_subagents


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

    @field_validator("path")
    @classmethod
    def _exists(cls, value: str) -> str:
        require_input(value)
        return value


class AtifInputError(InputError):
    """No ATIF files where the user pointed, or none of them valid."""


def find_documents(path: str, pattern: str = "*.json") -> list[Path]:
    found = find_files(path, pattern=pattern)
    if not found:
        where = f"{path} (pattern {pattern})" if Path(path).expanduser().is_dir() else path
        raise AtifInputError(f"atif source: no files match {where}")
    return found


MANIFEST = "manifest.json"  # the atif sink's listing of what it wrote (bashgym_formats_atif.sink)
MANIFEST_KEYS = {"files", "subagent_files"}


def sink_manifest(path: Path) -> bool:
    """Whether `path` is the atif sink's own `manifest.json`: that name, and a JSON object of
    lists of file names only (`files`, `subagent_files`): a trajectory named so has `steps`."""
    if path.name != MANIFEST:
        return False
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    return (
        isinstance(doc, dict)
        and "files" in doc
        and set(doc) <= MANIFEST_KEYS
        and all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in doc.values())
    )


class AtifSource(Source[AtifOptions]):
    """ATIF trajectory JSON files (one, a folder or a glob), one Trace per document."""

    output_format = "traces"

    def open(self, options: AtifOptions, run: RunContext) -> Iterator[Trace]:
        return self._traces(find_documents(options.path, options.pattern), run)

    def _traces(self, paths: list[Path], run: RunContext) -> Iterator[Trace]:
        problems: list[str] = []
        nested = {ref.resolve() for path in paths for ref in referenced_files(path)}
        skipped = len(nested & {p.resolve() for p in paths})
        for path in paths:
            if path.resolve() in nested:
                run.count("source.subagent_files")
                continue
            if sink_manifest(path):
                run.count("source.sink_manifests")
                skipped += 1
                continue
            try:
                trace = load_atif(path, subagents=False)
            except (ValueError, OSError) as exc:  # UnicodeDecodeError is a ValueError
                problems.append(f"{path}: {exc}")
                run.count("source.invalid_files")
                run.note(problems[-1])
                continue
            for problem in resolve_subagents(trace, path):
                run.count("source.unresolved_subagents")
                run.note(problem)
            run.count("source.files")
            yield trace
        if problems and len(problems) == len(paths) - skipped:
            raise AtifInputError(
                f"atif source: none of {len(paths)} file(s) is a valid ATIF document; "
                f"first: {problems[0]}"
            )
