"""Generated rows → training rows, in pandas (shared with coding-agent-dpo).

Kept: what a trainer reads (the conversation, the system prompt), what lets a user slice or
audit the data (ids, sampler values, judge scores as plain int columns like
`score_correctness`, the ruff scores) and the structured trajectory as JSON text for later
reshaping (e.g. into tool-call turns). Dropped: the intermediate columns (rendered files, raw
validation dicts, the seed text), which sinks would otherwise write out verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd
from bashgym_designer.rubrics import Rubric, scores_of

from bashgym.text import plain
from bashgym_pipelines_coding_agent.trajectory import NO_FILE

ID_COLUMNS = ("record_id", "seed_id", "seed_source")


def present(dataset: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    return [c for c in columns if c in dataset.columns]


def score_columns(
    values: pd.Series, rubric: Rubric, prefix: str, *, total: bool = True
) -> pd.DataFrame:
    """`<prefix>_<criterion>` per criterion, plus `<prefix>_total` when `total` (None when a
    criterion's score is missing)."""
    rows = []
    for value in values:
        scores = scores_of(value, rubric)
        row: dict[str, Any] = {f"{prefix}_{k}": v for k, v in scores.items()}
        if total:
            known = [s for s in scores.values() if s is not None]
            row[f"{prefix}_total"] = sum(known) if len(known) == len(scores) else None
        rows.append(row)
    return pd.DataFrame(rows, index=values.index).astype(object)


def lint_score(dataset: pd.DataFrame, checks: list[tuple[str, str]]) -> pd.Series:
    """The lowest ruff score (0-10) among the Python files a row wrote, from `checks` pairs of
    (file column, validation column); None when it wrote none."""

    def lowest(row: pd.Series) -> float | None:
        scores = []
        for file_column, validation in checks:
            value = plain(row.get(validation))
            if str(row.get(file_column)).strip() == NO_FILE.strip() or not isinstance(value, dict):
                continue
            score = value.get("python_linter_score")
            if isinstance(score, int | float) and not isinstance(score, bool):
                scores.append(float(score))
        return min(scores) if scores else None

    if not checks or dataset.empty:
        return pd.Series([None] * len(dataset), index=dataset.index, dtype=object)
    return dataset.apply(lowest, axis=1).astype(object)


def as_json(value: Any) -> str | None:
    value = plain(value)
    return None if value is None else json.dumps(value, ensure_ascii=False)


def chat_messages(task: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": task}, {"role": "assistant", "content": answer}]
