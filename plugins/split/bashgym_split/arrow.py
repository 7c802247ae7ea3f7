"""A pipeline's rows as one Arrow table, even when a column holds values of several types.

Why: rows from messy JSONL (`"response": "x"` in one row, `42` in the next; an object, a list
and a string in one column) are common, and Arrow types a column as one type, so
`pa.Table.from_pandas` refuses them (`ArrowTypeError`, `ArrowInvalid: cannot mix list and
non-list`). A sink must not crash on them nor drop them: such a column is stored losslessly as
text its consumer loads, and the sink says so in a run note:

- `json`: a column with any nested value (object or list) holds each value as JSON text, strings
  too (`"plain"` becomes `"\\"plain\\""`), so `json.loads` gives every value back as it was;
- `text`: a column of mixed scalars holds strings as they are and other values as JSON
  (`42` becomes `"42"`, `True` becomes `"true"`).

Nulls stay null, and a column Arrow can type is left exactly as `from_pandas` makes it.

Why here: every sink that writes Arrow (parquet, hf-hub) must store such a column one way, and
this is the library those sinks share (as they share the split).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from bashgym.text import plain

Form = Literal["json", "text"]
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)
KIND_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "text",
    dict: "object",
    list: "list",
}


@dataclass(frozen=True)
class Converted:
    """One column Arrow could not give one type: the kinds of value seen, and its new form."""

    column: str
    kinds: tuple[str, ...]
    form: Form

    def describe(self) -> str:
        if len(self.kinds) > 1:
            held = f"mixes {', '.join(self.kinds[:-1])} and {self.kinds[-1]} values"
        else:  # one kind, e.g. objects whose fields differ in type from row to row
            held = f"holds {''.join(self.kinds) or 'no'} values of differing shapes"
        if self.form == "json":
            how = "stored as JSON text, one JSON value per row (json.loads gives it back)"
        else:
            how = 'stored as text (strings as they are, other values as JSON: 42 is "42")'
        return f"column `{self.column}` {held}: {how}"


@dataclass
class Typed:
    """An Arrow table and the columns converted to make it."""

    table: pa.Table
    converted: list[Converted]


def arrow_table(frame: pd.DataFrame) -> Typed:
    """`frame` as Arrow (`pa.Table.from_pandas`, no index); a column it cannot type is stored
    as JSON text or text (module docstring) and named in `converted`."""
    try:
        return Typed(pa.Table.from_pandas(frame, preserve_index=False), [])
    except ARROW_ERRORS:
        pass
    fixed = frame.copy(deep=False)
    converted = []
    for i, name in enumerate(frame.columns):
        column = frame.iloc[:, i]
        try:
            pa.Array.from_pandas(column)
        except ARROW_ERRORS:
            values = [plain(v) for v in column.tolist()]
            change = _convert(name, values)
            fixed.isetitem(i, pd.Series(_encode(values, change.form), index=frame.index))
            converted.append(change)
    return Typed(pa.Table.from_pandas(fixed, preserve_index=False), converted)


def concat(parts: Sequence[Typed]) -> Typed:
    """One table from tables made by `arrow_table` (a streamed sink's batches).

    A column converted in one batch is converted in every batch (a batch of only strings left
    as they are would otherwise sit beside JSON text); a column whose batches Arrow cannot
    unify (text in one, numbers in the next) is converted as `arrow_table` would have."""
    tables = [p.table for p in parts]
    done: dict[str, Converted] = {}
    for part in parts:
        for change in part.converted:
            done[change.column] = _merge(done.get(change.column), change)
    if not done:
        try:
            return Typed(pa.concat_tables(tables, promote_options="permissive"), [])
        except ARROW_ERRORS:
            pass
    names = list(dict.fromkeys(n for t in tables for n in t.column_names))
    columns, converted = [], []
    for name in names:
        chunks = [_column(t, name) for t in tables]
        if name not in done:
            try:
                columns.append(_unify(name, chunks))
                continue
            except ARROW_ERRORS:
                done[name] = _convert(name, [plain(v) for c in chunks for v in c.to_pylist()])
        already = [{c.column: c.form for c in p.converted}.get(name) for p in parts]
        arrays, change = _recode(chunks, already, done[name])
        columns.append(pa.chunked_array(arrays, type=pa.string()))
        converted.append(change)
    return Typed(pa.table(columns, names=names), converted)


def note(sink: str, converted: Iterable[Converted]) -> str | None:
    """The run note naming each converted column and its form; None when there is none."""
    described = [c.describe() for c in converted]
    if not described:
        return None
    return f"{sink}: " + "; ".join(described)


def _convert(name: Hashable, values: list[Any]) -> Converted:
    kinds = list(dict.fromkeys(_kind(v) for v in values if v is not None))
    nested = any(isinstance(v, dict | list) for v in values)
    return Converted(str(name), tuple(kinds), "json" if nested else "text")


def _merge(old: Converted | None, new: Converted) -> Converted:
    if old is None:
        return new
    kinds = tuple(dict.fromkeys([*old.kinds, *new.kinds]))
    return Converted(new.column, kinds, "json" if "json" in (old.form, new.form) else "text")


def _kind(value: Any) -> str:
    return KIND_NAMES.get(type(value), type(value).__name__)


def _encode(values: list[Any], form: Form) -> list[str | None]:
    def one(value: Any) -> str | None:
        if value is None:
            return None
        if form == "text" and isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)

    return [one(v) for v in values]


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    """The table's column `name`, or nulls where its batch had no such column."""
    if name in table.column_names:
        return table.column(name)
    return pa.chunked_array([pa.nulls(table.num_rows)])


def _unify(name: str, chunks: list[pa.ChunkedArray]) -> pa.ChunkedArray:
    """The column's chunks as one type (nulls and numbers widened as `concat_tables` does)."""
    tables = [pa.table({name: c}) for c in chunks]
    return pa.concat_tables(tables, promote_options="permissive").column(name)


def _recode(
    chunks: list[pa.ChunkedArray], already: list[Form | None], change: Converted
) -> tuple[list[pa.Array], Converted]:
    """Each chunk in one form (kept when its batch was converted to that form already), and
    the change with the kinds of value the unconverted chunks held added (an object there
    makes the whole column JSON text)."""
    values = [
        None if was else [plain(v) for v in c.to_pylist()]
        for c, was in zip(chunks, already, strict=True)
    ]
    for held in values:
        if held is not None:
            change = _merge(change, _convert(change.column, held))
    out: list[pa.Array] = []
    for chunk, was, held in zip(chunks, already, values, strict=True):
        if was == change.form:
            out.extend(chunk.cast(pa.string()).chunks)
        else:
            held = held if held is not None else chunk.to_pylist()
            out.append(pa.array(_encode(held, change.form), pa.string()))
    return out, change
