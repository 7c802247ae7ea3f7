"""The `prompts` source: options and file discovery; the per-format readers live in `reader`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from bashgym_inputs import glob_files, is_glob, require_input
from pydantic import Field, field_validator

from bashgym.contracts import Options, RunContext, Source
from bashgym_sources_prompts.reader import (
    SUPPORTED,
    PromptsInputError,
    folder_files,
    natural_key,
    read_file,
)


class PromptsOptions(Options):
    path: str = Field(
        description=(
            "A .txt (one prompt per line, # comments), .jsonl/.json, or .md file; a folder of "
            "numbered .md files (01-setup.md, 02-..., in numeric order); or a glob."
        )
    )
    field: str = Field(
        default="prompt",
        description="JSON field holding the prompt; without it a 'messages' list's last user turn.",
    )
    split_headings: int | None = Field(
        default=None,
        ge=1,
        le=2,
        description="Split markdown into one prompt per heading of this level (1 = #, 2 = ##).",
    )

    @field_validator("path", "field")
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


class PromptsSource(Source[PromptsOptions]):
    """Prompt lists (txt, jsonl/json, markdown, a folder of numbered markdown) as seed rows."""

    def open(self, options: PromptsOptions, run: RunContext) -> pd.DataFrame:
        rows = []
        for path in self._paths(options.path, run):
            rows.extend(read_file(path, run, options.field, options.split_headings))
        if not rows:
            raise PromptsInputError(f"prompts source: no prompts found in {options.path}")
        frame = pd.DataFrame(rows)
        place = ["source_file", "source_line", "source_index"]
        first = ["prompt"] + [c for c in ("title", "messages") if c in frame.columns]
        rest = [c for c in frame.columns if c not in first and c not in place]
        return frame[first + rest + [c for c in place if c in frame.columns]]

    def _paths(self, path: str, run: RunContext) -> list[Path]:
        target = Path(path).expanduser()
        if target.is_dir():
            found = folder_files(target, run)
            if not found:
                raise PromptsInputError(
                    f"prompts source: no prompt files ({', '.join(SUPPORTED)}) in folder {path}"
                )
            return found
        if is_glob(path):
            found = sorted(glob_files(path), key=lambda p: natural_key(str(p)))
        else:
            found = [target] if target.is_file() else []
        if not found:
            raise PromptsInputError(f"prompts source: nothing matches {path!r}")
        return found
