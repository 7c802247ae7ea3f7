"""Answers made comparable: whatever a run submits becomes plain JSON with one shape per meaning.

A teacher may submit the same answer as a pandas Series, a dict, a one-row DataFrame, a numpy
scalar or the text "42"; triangulation must see one answer there, not five. `normalize` runs
inside the sandbox (where the submitted object lives) and turns it into JSON-able values:

- scalars: None (for None, NaN, NA, NaT), bool, int, float (an integral float becomes an int,
  so a mean of 3.0 and a count of 3 agree), str (stripped; a plain decimal literal such as
  "42" or "-0.5" becomes a number, "007" stays text);
- lists (tuples, arrays; sets sorted), dicts with text keys, and frames as
  `{"__frame__": {"columns": [...], "rows": [[...], ...]}}`;
- a Series becomes a dict (index -> value), or a list when its index is an unnamed integer
  one (positions, as a filter leaves them); a DataFrame whose index means something (named,
  or not integer) gets it back as columns, else drops it; a frame with one value column and a
  meaningful index is a Series; a list of records with the same keys is a frame;
  named tuples and SciPy results (`TtestResult`, ...) become dicts of their fields;
- anything of length one (a 1-element list, a 1x1 frame) is its only element.

`canonical` orders what carries no order (frame columns by name, frame rows), so equal answers
serialize, and `answer_hash` hashes, equal. This module imports only the standard library at
load time (numpy and pandas are recognised by their type names), because the sandbox worker
imports it in every warm process.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

FRAME = "__frame__"
_NUMBER = re.compile(r"[+-]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|[+-]?0?\.\d+")
_MAX_DEPTH = 20
_MAX_INT = 2**53  # beyond this an integral float is not exactly an int


class AnswerError(ValueError):
    """The value cannot be an answer (too deep, or of a type with no plain form)."""


def _module(value: Any) -> str:
    return type(value).__module__.split(".", 1)[0]


def _number(value: float) -> int | float | None:
    if math.isnan(value):
        return None
    if math.isinf(value):
        return value
    if value.is_integer() and abs(value) < _MAX_INT:
        return int(value)
    return value


def _text(value: str) -> Any:
    text = value.strip()
    if _NUMBER.fullmatch(text):
        return _number(float(text)) if any(c in text for c in ".eE") else int(text)
    return text


def normalize(value: Any, _depth: int = 0) -> Any:
    """The plain JSON form of an answer (see the module docstring)."""
    if _depth > _MAX_DEPTH:
        raise AnswerError("the answer is nested too deeply")
    deeper = _depth + 1
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):  # numpy's float64 is a float: made a plain one here
        return _number(float(value))
    if isinstance(value, str):
        return _text(str(value))
    if isinstance(value, decimal.Decimal):
        return _number(float(value))
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return _number(value.total_seconds())
    kind = _module(value)
    if kind == "pandas":
        return _pandas(value, deeper)
    if kind == "numpy":
        return _numpy(value, deeper)
    if hasattr(value, "_asdict"):  # named tuples, SciPy's result tuples (private fields left out)
        fields = {k: v for k, v in value._asdict().items() if not str(k).startswith("_")}
        return _squeeze(normalize(fields, deeper))
    if isinstance(value, Mapping):
        return {_key(k): normalize(v, deeper) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return _squeeze(sorted((normalize(v, deeper) for v in value), key=_sort_key))
    if isinstance(value, (list, tuple)):
        return _records([normalize(v, deeper) for v in value])
    if hasattr(value, "statistic") and hasattr(value, "pvalue"):  # SciPy result objects
        return {"statistic": normalize(value.statistic, deeper), "pvalue": normalize(value.pvalue)}
    raise AnswerError(f"cannot submit a {type(value).__name__}: use a number, text, list, "
                      "dict, Series or DataFrame")  # fmt: skip


def _key(key: Any) -> str:
    plain = normalize(key)
    return plain if isinstance(plain, str) else json.dumps(plain)


def _squeeze(value: Any) -> Any:
    """A collection of one item is that item: `[42]`, a 1x1 frame and `42` are one answer."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    if isinstance(value, dict) and FRAME in value:
        rows = value[FRAME]["rows"]
        if len(rows) == 1 and len(rows[0]) == 1:
            return rows[0][0]
    return value


def _records(items: list[Any]) -> Any:
    """A list of dicts with the same keys (`df.to_dict("records")`) is a frame."""
    if len(items) > 1 and all(isinstance(i, dict) and FRAME not in i for i in items):
        keys = list(items[0])
        if keys and all(list(i) == keys for i in items):
            return {FRAME: {"columns": keys, "rows": [[i[k] for k in keys] for i in items]}}
    return _squeeze(items)


def _numpy(value: Any, depth: int) -> Any:
    if hasattr(value, "tolist"):  # arrays and numpy scalars (datetime64 included)
        if getattr(value, "dtype", None) is not None and value.dtype.kind == "M":
            return normalize(_numpy_datetime(value), depth)
        return normalize(value.tolist(), depth)
    raise AnswerError(f"cannot submit a numpy {type(value).__name__}")


def _numpy_datetime(value: Any) -> Any:
    import pandas as pd  # ~0.5 s (measured): see the docstring

    if getattr(value, "ndim", 0):
        return [pd.Timestamp(v) if str(v) != "NaT" else None for v in value]
    return None if str(value) == "NaT" else pd.Timestamp(value)


def _meaningless_index(index: Any) -> bool:
    """An unnamed integer index (0..n-1, or what a filter left of it) labels positions, not
    answers: two runs that filter the same rows may or may not have reset it."""
    import pandas as pd  # (see _numpy_datetime)

    unnamed = all(name is None for name in index.names)
    return unnamed and index.nlevels == 1 and pd.api.types.is_integer_dtype(index.dtype)


def _pandas(value: Any, depth: int) -> Any:
    import pandas as pd  # (see _numpy_datetime)

    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, pd.Timedelta):
        return _number(value.total_seconds())
    if isinstance(value, pd.Interval):
        return str(value)
    if isinstance(value, pd.Index):
        return normalize(list(value), depth)
    if isinstance(value, pd.Series):
        if _meaningless_index(value.index):
            return normalize(value.tolist(), depth)
        return _squeeze({_key(k): normalize(v, depth) for k, v in value.items()})
    if isinstance(value, pd.DataFrame):
        frame = value
        if not _meaningless_index(frame.index):
            if frame.shape[1] == 1 and frame.index.nlevels == 1:
                return normalize(frame.iloc[:, 0], depth)
            frame = frame.reset_index()
        columns = [_key(c) for c in frame.columns]
        rows = [[normalize(v, depth) for v in row] for row in frame.itertuples(index=False)]
        return _squeeze({FRAME: {"columns": columns, "rows": rows}})
    if hasattr(value, "tolist"):  # Categorical, extension arrays
        return normalize(value.tolist(), depth)
    raise AnswerError(f"cannot submit a pandas {type(value).__name__}")


def _sort_key(value: Any) -> str:
    return json.dumps(canonical(value), sort_keys=True, default=str)


def canonical(value: Any) -> Any:
    """`value` (normalized) with the order that carries no meaning removed: frame columns
    sorted by name and rows sorted. Dict key order is dropped by `sort_keys` when dumped."""
    if isinstance(value, dict):
        if FRAME in value and len(value) == 1:
            frame = value[FRAME]
            order = sorted(range(len(frame["columns"])), key=lambda i: str(frame["columns"][i]))
            rows = [[canonical(row[i]) for i in order] for row in frame["rows"]]
            return {FRAME: {"columns": [frame["columns"][i] for i in order],
                            "rows": sorted(rows, key=_sort_key)}}  # fmt: skip
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def answer_hash(value: Any) -> str:
    """A short exact hash of a normalized answer (equal iff the canonical forms are equal)."""
    text = json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def type_name(value: Any) -> str:
    """What kind of answer a normalized value is, for traces and prompts."""
    if isinstance(value, dict):
        return "frame" if FRAME in value else "dict"
    if isinstance(value, list):
        return "list"
    if value is None:
        return "none"
    return type(value).__name__
