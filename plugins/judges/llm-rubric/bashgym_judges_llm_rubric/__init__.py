"""BashGym judges/llm-rubric: named LLM-as-judge rubrics with int scores and keep thresholds,
reusable by any pipeline.

Pipelines use the functions (`judge_column`, `threshold_rules`, `total_score_expr`,
`scores_of`) on their own builders; users add the `llm-rubric` judge to any run.
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

__all__ = [
    "DEFAULT_THRESHOLD",
    "RUBRICS",
    "Criterion",
    "LlmRubricJudge",
    "LlmRubricOptions",
    "Rubric",
    "get_rubric",
    "judge_column",
    "judge_prompt",
    "resolve_thresholds",
    "scores_of",
    "threshold_rules",
    "total_score_expr",
]


@hookimpl
def register_judges(register):
    register("llm-rubric", LlmRubricJudge())
