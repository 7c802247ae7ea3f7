"""The `llm-rubric` judge: a rubric's judge column on any pipeline, plus a threshold filter.

Rows below a threshold are dropped inside DataDesigner by the `bashgym-filter` processor, which
records each one with its criterion (`bashgym_designer.drops.record_drops`), so the run
reports why every row went. The rubrics and the wiring live in `bashgym_designer.rubrics`.
"""

from __future__ import annotations

from typing import Any

from bashgym_designer.rubrics import RUBRICS, add_rubric_judge, get_rubric, resolve_thresholds
from pydantic import Field, field_validator, model_validator

from bashgym.contracts import Judge, Options, RunContext


class LlmRubricOptions(Options):
    rubric: str = Field(
        default="instruction-response",
        description=f"Built-in rubric to score with: {', '.join(sorted(RUBRICS))}.",
    )
    column: str = Field(
        default="quality",
        description="Name of the judge column; scores read as <column>.<criterion>.score.",
    )
    model: str = Field(
        default="judge",
        description="Model alias that judges (falls back to 'default' when not configured).",
    )
    prompt_column: str = Field(
        default="prompt", description="Column holding the task or instruction being answered."
    )
    response_column: str = Field(
        default="response", description="Column holding the response being judged."
    )
    prompt: str | None = Field(
        default=None,
        description="Full Jinja judge prompt replacing the built-in one (criteria are appended).",
    )
    thresholds: dict[str, int] = Field(
        default_factory=dict,
        description="Per-criterion lowest kept score, overriding the rubric's (default 3).",
    )
    drop_below: bool = Field(
        default=True,
        description="Drop rows scoring below a threshold (each recorded with its criterion).",
    )

    @field_validator("rubric")
    @classmethod
    def _known_rubric(cls, name: str) -> str:
        get_rubric(name)  # InputError (a ValueError) naming the known rubrics
        return name

    @field_validator("column", "prompt_column", "response_column")
    @classmethod
    def _identifier(cls, column: str) -> str:
        if not column.isidentifier():
            raise ValueError(f"{column!r} must be a column name Jinja can read (letters, _)")
        return column

    @model_validator(mode="after")
    def _thresholds_fit(self) -> LlmRubricOptions:
        resolve_thresholds(get_rubric(self.rubric), self.thresholds)
        return self


class LlmRubricJudge(Judge[LlmRubricOptions]):
    """Score rows with an LLM judge rubric (int 1-5 per criterion); drop rows below thresholds."""

    runner = "datadesigner"

    def configure(self, builder: Any, options: LlmRubricOptions, run: RunContext) -> None:
        add_rubric_judge(
            builder,
            run,
            column=options.column,
            rubric=get_rubric(options.rubric),
            model_alias=options.model,
            prompt_column=options.prompt_column,
            response_column=options.response_column,
            prompt=options.prompt,
            thresholds=options.thresholds,
            drop_below=options.drop_below,
        )
