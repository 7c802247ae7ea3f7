"""Values and messages made plain: `plain` is how every part reads a DataFrame cell, so equal rows
hash and serialize equal wherever read; `one_line` words every user-facing error (a pydantic one
names the option and the problem; a library's boxed multi-line errors are condensed)."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

MAX_MESSAGE = 300
# pydantic's words where they name a class or say "Field required" (`runs_dir = 5` in a file)
PLAIN_ERRORS = {"missing": "required, and not given", "path_type": "must be a path, as text"}


def plain(value: Any) -> Any:
    """JSON-ready Python values from what a DataFrame row holds (numpy arrays and scalars,
    NaN/NA/NaT as None, timestamps as ISO text), so equal rows hash equal however they were read."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, str | bool | int | float):
        return None if isinstance(value, float) and math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return plain(value.tolist())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def explain_validation(
    exc: ValidationError, unknown: str = "unknown option", known: Iterable[str] = ()
) -> str:
    """`option: problem; option: problem`, an extra key called `unknown` (an unknown option,
    or in settings files an unknown setting) with the `known` name it may be a typo of."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        extra = err["type"] == "extra_forbidden"
        near = did_you_mean(loc.rsplit(".", 1)[-1], known) if extra else ""
        msg = unknown + near if extra else err["msg"].removeprefix("Value error, ")  # a validator's
        msg = PLAIN_ERRORS.get(err["type"], msg)
        got = None if extra else err.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float) and got != "" else ""
        problems.append(f"{loc}: {msg}{shown}")
    return "; ".join(problems)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'path'?)` when `name` looks like a typo of one of `known`, else ''."""
    near = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def one_line(exc: BaseException) -> str:
    """Any error as one line: `invalid Model: field: problem` for pydantic, else `Type: text`."""
    if isinstance(exc, ValidationError):
        return f"invalid {exc.title}: {explain_validation(exc)}"
    text = condense(str(exc).splitlines())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def condense(lines: list[str]) -> str:
    """Lines of a message as one line, without box rules, bars and emoji, cut at a word."""
    rule = re.compile(r"^-+(?=\s|$)|(?<=\s)-+$")  # rules and bullets, not `--set`'s dashes
    pieces = [rule.sub("", ln.strip().strip("|🛑⚠️🔔 ")).strip(" |") for ln in lines]
    text = re.sub(r"\s+", " ", " ".join(p for p in pieces if p)).strip()
    if len(text) <= MAX_MESSAGE:
        return text
    cut = text[: MAX_MESSAGE - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
