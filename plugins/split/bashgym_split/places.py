"""Where a user finds a row that was dropped: its file and its row there, as the sources that
read many rows from one file number them. Beside `record_key` (a row's identity for the split)
because every part that drops rows — sinks, the DataDesigner runner's filters — must name the
same row the same way in run.json's `dropped_rows` and dropped.jsonl."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bashgym.text import plain

# the files source's 0-based `source_row`; the prompts source's 1-based `source_line` as
# `file:3` and `source_index` (an item of a JSON list, a markdown section) as `file[2]`, the
# words of its own notes
NUMBERED = (("source_row", "{} (source_row {})"), ("source_line", "{}:{}"),
            ("source_index", "{}[{}]"))  # fmt: skip


def row_place(row: Mapping[str, Any]) -> str | None:
    """`file`, `file:3`, `file[2]` or `file (source_row 4)`; None for a row with no file."""
    where = plain(row.get("source_file"))
    if not where:
        return None
    for column, said in NUMBERED:
        number = _number(row.get(column))
        if number is not None:
            return said.format(where, number)
    return str(where)


def _number(value: Any) -> int | None:
    """A row number as pandas holds it: an int, or a float when another file's rows have none
    (a glob of .txt and .md prompt files: `source_line` is NaN on the markdown rows)."""
    value = plain(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
