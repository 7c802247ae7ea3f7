"""BashGym judges/llm-rubric: named LLM-as-judge rubrics with int scores and keep thresholds,
reusable by any pipeline.

Pipelines use the functions (`judge_column`, `threshold_rules`, `total_score_expr`,
`scores_of`, or all-in-one `add_rubric_judge` with `JudgedPipelineOptions`) on their own
builders; users add the `llm-rubric` judge to any run.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_judges_llm_rubric.builtin import RUBRICS, get_rubric
from bashgym_judges_llm_rubric.columns import (
    judge_column,
    judge_prompt,
    resolve_thresholds,
    scores_of,
    threshold_rules,
    total_score_expr,
)
from bashgym_judges_llm_rubric.judge import LlmRubricJudge, LlmRubricOptions
from bashgym_judges_llm_rubric.rubric import DEFAULT_THRESHOLD, Criterion, Rubric
from bashgym_judges_llm_rubric.wiring import (
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
    "LlmRubricJudge",
    "LlmRubricOptions",
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


@hookimpl
def register_judges(register):
    register("llm-rubric", LlmRubricJudge())
