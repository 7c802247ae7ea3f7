"""Local paths cut to their last part (`.../qa.csv`) before they reach a Hub folder.

Why: the folder is made to be published, and a path such as `/home/alice/work/qa.csv`, or the
project directory a coding agent ran in, tells the world a user's name and layout. The card
shortens the option values of the run's config; the rows' provenance columns are shortened the
same way, so a row's `source_file` reads as the card's `source.path` does (`.../qa.csv`). The
name is kept: it is what tells a reader which file or project a row came from. The run's own
files (run.json, the parquet sink's output) keep whole paths: they stay on the machine.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

# the columns that hold a local path: trace rows' `source_file` and `project` (the agent's
# working directory), a files or prompts source's `source_file`, an executor's `workspace`
PATH_COLUMNS = ("source_file", "project", "workspace")
_SEPARATORS = re.compile(r"[\\/]")


def short_path(value: str) -> str:
    """`.../<last part>` of a path with a directory in it (POSIX or Windows separators); a bare
    name, or a root with no name, as it is."""
    name = _SEPARATORS.split(value.rstrip("/\\"))[-1]
    return f".../{name}" if name and name != value else value


def looks_absolute(value: str) -> bool:
    """`/x`, `~/x` or `C:\\x`: how the card tells a path among a config's other strings."""
    return value.startswith(("/", "~")) or value[1:3] in (":\\", ":/")


def shortened(columns: list[str]) -> list[str]:
    """Which of `columns` hold local paths that the Hub rows carry shortened."""
    return [c for c in PATH_COLUMNS if c in columns]


def shorten_row(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with its path columns' text shortened (a missing value stays missing)."""
    for column in shortened(list(row)):
        if isinstance(row[column], str):
            row[column] = short_path(row[column])
    return row


def shorten_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` with its path columns' text shortened; `frame` unchanged (the other
    sinks of the run are handed the same rows)."""
    columns = shortened(list(frame.columns))
    if not columns:
        return frame
    out = frame.copy()
    for column in columns:
        out[column] = [short_path(v) if isinstance(v, str) else v for v in frame[column]]
    return out
