"""Which seed column plays which role: the user's mapping first, then common column names.

Why auto-detection at all: most instruction datasets use a handful of names (Alpaca's
instruction/input/output, Dolly's instruction/context/response, Q&A sets' question/answer,
chat exports' prompt/completion), so `-s huggingface ... -p from-external` should work with no
mapping. Candidates are tried in order and a column serves one role only, which is how
Alpaca's `input` ends up as context when an `instruction` column exists and as the instruction
when it does not. When nothing fits, the error lists the seed's columns and how to map one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bashgym.contracts import InputError

if TYPE_CHECKING:
    import pandas as pd

NAME = "from-external"
CANDIDATES: dict[str, tuple[str, ...]] = {
    "instruction": ("instruction", "prompt", "question", "query", "problem", "task", "input"),
    "context": ("context", "input", "passage", "document", "background"),
    "reference_answer": (
        "reference_answer", "output", "response", "answer", "completion", "solution",
        "reference", "target",
    ),
    "system_prompt": ("system_prompt", "system"),
}  # fmt: skip


def resolve_mapping(columns: Sequence[str], explicit: Mapping[str, str]) -> dict[str, str]:
    """Role → seed column, for every role that has one; InputError when no instruction."""
    have = list(columns)
    missing = {role: col for role, col in explicit.items() if col not in have}
    if missing:
        role, col = next(iter(missing.items()))
        raise InputError(
            f"{NAME}: mapping.{role} names column {col!r}, but the seed's columns are {have}"
        )
    mapping = dict(explicit)
    by_lower = {c.lower(): c for c in reversed(have)}  # first spelling wins
    for role, names in CANDIDATES.items():
        if role in mapping:
            continue
        used = set(mapping.values())
        found = next(
            (by_lower[n] for n in names if n in by_lower and by_lower[n] not in used), None
        )
        if found is not None:
            mapping[role] = found
    if "instruction" not in mapping:
        raise InputError(
            f"{NAME}: no instruction column among the seed's columns {have}; map one with "
            f"--set pipeline.mapping.instruction=COLUMN (names found automatically: "
            f"{', '.join(CANDIDATES['instruction'])})"
        )
    return {role: mapping[role] for role in CANDIDATES if role in mapping}


def check_columns(seed: pd.DataFrame, mapping: Mapping[str, str]) -> None:
    """Mapped columns must be usable in a template and hold text (or nothing) in every row."""
    for role, column in mapping.items():
        if not column.isidentifier():
            raise InputError(
                f"{NAME}: column {column!r} ({role}) cannot be read in a template: rename it "
                "to letters, digits and _ in the source"
            )
        values = seed[column].dropna()
        odd = values[~values.map(lambda v: isinstance(v, str))]
        if len(odd):
            kind = type(odd.iloc[0]).__name__
            raise InputError(
                f"{NAME}: column {column!r} ({role}) must hold text, but holds {kind} values "
                f"(e.g. {str(odd.iloc[0])[:60]!r}); map another column"
            )
