"""BashGym judges/llm-rubric: the `llm-rubric` judge, a named LLM-as-judge rubric's judge column
on any run, with keep thresholds.

The rubrics and the functions pipelines use on their own builders live in the shared library
`bashgym_designer.rubrics`.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_judges_llm_rubric.judge import LlmRubricJudge, LlmRubricOptions

__all__ = ["LlmRubricJudge", "LlmRubricOptions"]


@hookimpl
def register_judges(register):
    register("llm-rubric", LlmRubricJudge())
