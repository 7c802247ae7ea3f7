"""LLM-as-judge rubrics: named criteria with int scores and keep thresholds, on a DataDesigner
builder.

Pipelines use the functions (`judge_column`, `threshold_rules`, `total_score_expr`, `scores_of`,
or all-in-one `add_rubric_judge` with `JudgedPipelineOptions` and `writer_builder`) on their own
builders; the `llm-rubric` judge plugin puts one on any run.
"""

from __future__ import annotations

from bashgym_designer.rubrics.builtin import RUBRICS, get_rubric
from bashgym_designer.rubrics.columns import (
    judge_column,
    judge_prompt,
    resolve_thresholds,
    scores_of,
    threshold_rules,
    total_score_expr,
)
from bashgym_designer.rubrics.rubric import DEFAULT_THRESHOLD, Criterion, Rubric
from bashgym_designer.rubrics.wiring import (
    JudgedPipelineOptions,
    add_rubric_judge,
    ensure_model,
    thresholds_field,
    writer_builder,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "RUBRICS",
    "Criterion",
    "JudgedPipelineOptions",
    "Rubric",
    "add_rubric_judge",
    "ensure_model",
    "get_rubric",
    "judge_column",
    "judge_prompt",
    "resolve_thresholds",
    "scores_of",
    "threshold_rules",
    "thresholds_field",
    "total_score_expr",
    "writer_builder",
]
