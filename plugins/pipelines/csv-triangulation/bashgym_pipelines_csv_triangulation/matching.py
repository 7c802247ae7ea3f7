"""Do two answers agree, and does the gold answer agree with the majority of the others?

Answers arrive normalized (`answers.normalize`). Agreement is decided in two passes, as the
triangulation design asks: first by exact hash of the canonical form (identical answers group
at no cost), then with tolerances between the groups:
- numbers: of the same sign, and within `relative_tolerance` of the larger (default 1%) or
  within `float_tolerance` (absolute, default 0.005: what rounding to two decimals moves); a
  number under a p-value key (`p`, `pvalue`, `p_value`, `p-value`, `..._p`) or a whole answer
  declared a p-value, within `p_value_tolerance` (default 0.002) instead. Why relative and
  signed: an absolute 0.1 "confirmed" a correlation of 0.047 by five runs answering -0.047;
- text: equal after case folding and collapsing white space; bool only equals bool;
- lists: same length, item by item, in order (a ranking is an ordered answer);
- dicts: the same keys (case-folded), value by value;
- frames: same shape, columns aligned by name (by position when the names differ), rows in
  any order; a frame of two columns also equals the dict of its first column to its second.

Tolerance is not transitive (1.00 ~ 1.08 ~ 1.16, but 1.00 !~ 1.16), so clusters are formed
around centres: each distinct answer's support is the number of runs whose answers agree with
it, the best-supported answer is the majority's centre, and the majority is the runs that agree
with the centre. It counts only when it holds more than `min_majority` of all consistency runs
(a run that submitted nothing counts against it), and two disagreeing centres with equal
support are a tie: no majority. The gold answer is verified when it agrees with the centre.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field

from bashgym.contracts import Options
from bashgym_pipelines_csv_triangulation.answers import FRAME, answer_hash

P_VALUE_KEY = re.compile(r"^(?:.*[_\s-])?p(?:[_\s-]?val(?:ue)?)?$", re.IGNORECASE)
GOLD_FAILED = "gold run submitted no answer"
NOTHING_SUBMITTED = "no consistency run submitted an answer"
NO_MAJORITY = "no majority among the consistency runs"
DISAGREES = "gold answer disagrees with the majority"
REASONS = (GOLD_FAILED, NOTHING_SUBMITTED, NO_MAJORITY, DISAGREES)
MAX_ASSIGNMENT_ROWS = 400  # frames larger than this are compared in sorted order only
_EPS = 1e-9  # floating-point slack at the tolerance boundary


def nested_schema(schema: dict[str, Any]) -> None:
    """Leave `additionalProperties: false` out of a nested option model's JSON schema.

    Validation still refuses unknown keys (extra="forbid"); only the schema changes, because
    `bashgym options` (core/cli.py `_schema_type`) reads `additionalProperties` as a schema and
    fails on the boolean that extra="forbid" puts there."""
    schema.pop("additionalProperties", None)


class MatchOptions(Options):
    """How close two answers must be to count as one (shared by the pipeline and the judge)."""

    model_config = ConfigDict(json_schema_extra=nested_schema)

    float_tolerance: float = Field(
        default=0.005,
        ge=0,
        description="Numbers of the same sign agree within this absolute difference (the "
        "rounding of two decimals).",
    )
    relative_tolerance: float = Field(
        default=0.01,
        ge=0,
        description="Numbers of the same sign also agree within this fraction of the larger.",
    )
    p_value_tolerance: float = Field(
        default=0.002,
        ge=0,
        description="p-values (under a p/pvalue/p_value key, or a p-value answer) agree "
        "within this absolute difference.",
    )
    min_majority: float = Field(
        default=0.5,
        ge=0,
        lt=1,
        description="The majority must hold MORE than this share of the consistency runs "
        "(failed runs count against it): 0.5 means 3 of 5.",
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value: str) -> str:
    return " ".join(value.casefold().split())


def _is_frame(value: Any) -> bool:
    return isinstance(value, dict) and FRAME in value and len(value) == 1


def _numbers_match(a: float, b: float, options: MatchOptions, p_value: bool) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    slack = _EPS * max(1.0, abs(a), abs(b))
    if p_value:
        return abs(a - b) <= options.p_value_tolerance + slack
    if a * b < 0:  # opposite signs are opposite findings, however close to zero
        return False
    if abs(a - b) <= options.float_tolerance + slack:
        return True
    return abs(a - b) <= options.relative_tolerance * max(abs(a), abs(b)) + slack


def values_match(a: Any, b: Any, options: MatchOptions, *, p_value: bool = False) -> bool:
    """Whether two normalized answers agree (see the module docstring)."""
    if _is_number(a) and _is_number(b):
        return _numbers_match(float(a), float(b), options, p_value)
    if isinstance(a, str) and isinstance(b, str):
        return _text(a) == _text(b)
    if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if _is_frame(a) or _is_frame(b):
        return _frames_match(a, b, options)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            values_match(x, y, options, p_value=p_value) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return _dicts_match(a, b, options)
    return False


def _dicts_match(a: dict[str, Any], b: dict[str, Any], options: MatchOptions) -> bool:
    left = {_text(k): v for k, v in a.items()}
    right = {_text(k): v for k, v in b.items()}
    if left.keys() != right.keys() or len(left) != len(a) or len(right) != len(b):
        return False
    return all(
        values_match(v, right[k], options, p_value=bool(P_VALUE_KEY.match(k)))
        for k, v in left.items()
    )


def _as_dict(frame: dict[str, Any]) -> dict[str, Any] | None:
    """A two-column frame as {first column: second column}, when the keys are unique."""
    body = frame[FRAME]
    if len(body["columns"]) != 2:
        return None
    keys = [row[0] for row in body["rows"]]
    texts = [k if isinstance(k, str) else str(k) for k in keys]
    if len(set(texts)) != len(texts):
        return None
    return {t: row[1] for t, row in zip(texts, body["rows"], strict=True)}


def _frames_match(a: Any, b: Any, options: MatchOptions) -> bool:
    if not (_is_frame(a) and _is_frame(b)):
        frame, other = (a, b) if _is_frame(a) else (b, a)
        as_dict = _as_dict(frame)
        return (
            isinstance(other, dict)
            and as_dict is not None
            and _dicts_match(as_dict, other, options)
        )
    left, right = a[FRAME], b[FRAME]
    if len(left["columns"]) != len(right["columns"]) or len(left["rows"]) != len(right["rows"]):
        return False
    names_l = [_text(str(c)) for c in left["columns"]]
    names_r = [_text(str(c)) for c in right["columns"]]
    if sorted(names_l) == sorted(names_r) and len(set(names_l)) == len(names_l):
        order = [names_r.index(name) for name in names_l]
    else:  # different names for the same computed columns: compare by position
        order = list(range(len(names_l)))
    p_cols = [bool(P_VALUE_KEY.match(name)) for name in names_l]
    rows_l = left["rows"]
    rows_r = [[row[i] for i in order] for row in right["rows"]]

    def same(x: list[Any], y: list[Any]) -> bool:
        return all(
            values_match(u, v, options, p_value=p) for u, v, p in zip(x, y, p_cols, strict=True)
        )

    pairs = zip(sorted(rows_l, key=answer_hash), sorted(rows_r, key=answer_hash), strict=True)
    if all(same(x, y) for x, y in pairs):  # a stable order pairs equal rows at once
        return True
    if len(rows_l) > MAX_ASSIGNMENT_ROWS:
        return False
    return _perfect_matching(rows_l, rows_r, same)


def _perfect_matching(left: list[Any], right: list[Any], same: Any) -> bool:
    """Whether every row can be paired with a distinct agreeing row. Sorting fails when
    tolerance reorders near-equal rows; SciPy's assignment solver finds the pairing if any."""
    # ~0.75 s (measured): SciPy only when sorting could not pair the rows; this module is
    # imported with the pipeline, in every run
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    cost = np.array([[0.0 if same(x, y) else 1.0 for y in right] for x in left])
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum()) == 0.0


@dataclass
class Verdict:
    """What triangulation found for one question."""

    verified: bool
    reason: str | None  # why not verified, one of REASONS (stable, to count by); None if verified
    detail: str | None = None  # the reason with its numbers, for the row
    majority: Any = None  # the majority's centre answer (normalized)
    support: int = 0  # consistency runs that agree with the centre
    runs: int = 0  # consistency runs in all
    submitted: int = 0  # consistency runs that submitted an answer
    agreeing: list[int] = field(default_factory=list)  # indexes of the runs in the majority

    @property
    def agreement(self) -> str:
        return f"{self.support}/{self.runs}"

    def fail(self, reason: str, detail: str) -> Verdict:
        self.reason, self.detail = reason, detail
        return self


@dataclass
class _Group:
    value: Any
    members: list[int]


def triangulate(
    gold: tuple[bool, Any],
    consistency: Sequence[tuple[bool, Any]],
    options: MatchOptions,
    *,
    p_value: bool = False,
) -> Verdict:
    """Verify `gold` against the majority of `consistency` answers.

    Each run is `(submitted, answer)`: a run that submitted nothing is `(False, None)`.
    `p_value` declares the whole answer a p-value (its tolerance applies at the top level).
    """
    runs = len(consistency)
    done = [i for i, (ok, _) in enumerate(consistency) if ok]
    base = Verdict(False, None, runs=runs, submitted=len(done))
    if not gold[0]:
        return base.fail(GOLD_FAILED, GOLD_FAILED)
    if not done:
        return base.fail(NOTHING_SUBMITTED, f"{NOTHING_SUBMITTED} (0 of {runs})")
    groups: dict[str, _Group] = {}
    for i in done:
        value = consistency[i][1]
        groups.setdefault(answer_hash(value), _Group(value, [])).members.append(i)
    found = list(groups.values())

    def agree(x: Any, y: Any) -> bool:
        return values_match(x, y, options, p_value=p_value)

    support = [sum(len(h.members) for h in found if agree(g.value, h.value)) for g in found]
    best = max(range(len(found)), key=lambda i: (support[i], len(found[i].members), -i))
    centre = found[best]
    rivals = [
        g for i, g in enumerate(found)
        if i != best and support[i] == support[best] and not agree(g.value, centre.value)
    ]  # fmt: skip
    agreeing = sorted(i for g in found if agree(centre.value, g.value) for i in g.members)
    base.majority, base.support, base.agreeing = centre.value, support[best], agreeing
    if rivals:
        return base.fail(NO_MAJORITY, f"a tie between answers ({support[best]} runs each)")
    if support[best] <= options.min_majority * runs:
        return base.fail(
            NO_MAJORITY,
            f"{support[best]} of {runs} consistency runs agree "
            f"(more than {options.min_majority:.0%} needed)",
        )
    if not agree(gold[1], centre.value):
        return base.fail(DISAGREES, f"{DISAGREES} ({base.agreement} agree on another answer)")
    base.verified = True
    return base
