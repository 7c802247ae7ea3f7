"""Source rows → Tasks: the prompt from the first known prompt column, a stable id."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError
from bashgym.records import Task
from bashgym.text import plain

if TYPE_CHECKING:
    import pandas as pd

PROMPT_COLUMNS = ("prompt", "task", "instruction", "question", "text")


def tasks_from_rows(rows: pd.DataFrame) -> list[Task]:
    """One Task per row: its prompt from the first of PROMPT_COLUMNS the rows have, its id from
    an `id` column or a hash of the prompt (stable across runs, so resume finds it again).
    Rows with an empty prompt are left out; a repeated id gets a suffix; a missing id (None,
    NaN, empty) is the prompt's hash, as if the column were absent.

    An id is data, kept as the source wrote it (it names the trace): it becomes a folder, a
    branch or an argument only through `bashgym_procs.names.safe_name`."""
    column = next((c for c in PROMPT_COLUMNS if c in rows.columns), None)
    if column is None:
        raise InputError(
            "an executor needs a prompt per row: the source gave columns "
            f"{', '.join(map(str, rows.columns)) or 'none'}; name one of "
            f"{', '.join(PROMPT_COLUMNS)} (--map prompt=COLUMN)"
        )
    tasks, seen = [], set()
    for row in rows.to_dict(orient="records"):
        prompt = str(row[column] or "").strip()
        if not prompt:
            continue
        ident = _given_id(row.get("id")) or hashlib.sha256(prompt.encode()).hexdigest()[:12]
        while ident in seen:
            ident += "-2"
        seen.add(ident)
        meta = {k: plain(v) for k, v in row.items() if k not in (column, "id")}
        tasks.append(Task(id=ident, prompt=prompt, metadata=meta))
    return tasks


def _given_id(value: Any) -> str | None:
    """A row's id as text; None when missing (None, NaN, NA, blank)."""
    import pandas as pd  # ~0.5 s (measured): only when task rows are read, not at start-up

    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    return str(value)
