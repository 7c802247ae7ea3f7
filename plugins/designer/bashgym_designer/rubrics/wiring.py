"""One home for wiring a rubric judge into a builder, for the `llm-rubric` judge and for every
pipeline that judges its own rows (from-external, from-unstructured, tool-use-sft).

They all do the same three things: give the builder the judge's model config unless the
pipeline already brought one for that alias, add the rubric's judge column, and drop rows below
the thresholds with the `bashgym-filter` processor (one reason per criterion). Keeping that in
one function keeps the filter names, reasons and model configs alike across them; the shared
user-facing option fields live in `JudgedPipelineOptions` for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import data_designer.config as dd
from pydantic import Field

from bashgym.contracts import PipelineOptions, RunContext
from bashgym_designer.filters import FilterRule, add_filter
from bashgym_designer.models import model_config
from bashgym_designer.rubrics.builtin import get_rubric
from bashgym_designer.rubrics.columns import judge_column, threshold_rules
from bashgym_designer.rubrics.rubric import Rubric


def thresholds_field(rubric: str) -> Any:
    """The `thresholds` option of a pipeline judged by `rubric`, naming its criteria."""
    found = get_rubric(rubric)
    return Field(
        default_factory=dict,
        description=f"Minimum judge score per {found.name} criterion "
        f"({', '.join(found.names)}); default: the rubric's thresholds.",
    )


class JudgedPipelineOptions(PipelineOptions):
    """Options of a pipeline with one writer model and a rubric judge over what it writes.

    Subclasses restate `model` (what it writes) and `thresholds` (with `thresholds_field`)
    only to describe them for their own rows and rubric.
    """

    model: str = Field(default="default", description="Model alias that writes the rows.")
    judge_model: str = Field(default="judge", description="Model alias that judges them.")
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Sampling temperature for the writer (default: the alias's own).",
    )
    thresholds: dict[str, int] = Field(
        default_factory=dict,
        description="Minimum judge score per rubric criterion; default: the rubric's thresholds.",
    )
    drop_below: bool = Field(
        default=True, description="Drop rows scoring below a threshold (else keep the scores)."
    )

    def judge_settings(self) -> dict[str, Any]:
        """The `add_rubric_judge` arguments these options decide: who judges, and the drops."""
        return {
            "model_alias": self.judge_model,
            "thresholds": self.thresholds,
            "drop_below": self.drop_below,
        }


def writer_builder(run: RunContext, options: JudgedPipelineOptions) -> Any:
    """A DataDesigner builder holding the writer's model config (at `options.temperature`).

    The judge's config is added by `add_rubric_judge`, only where it is another alias: when
    one alias writes and judges, the writer's config serves both (DataDesigner refuses two
    configs with one alias).
    """
    assert run.models is not None, "the engine opens a model session for every run"
    params = {} if options.temperature is None else {"temperature": options.temperature}
    return dd.DataDesignerConfigBuilder(
        model_configs=[model_config(run.models.resolve(options.model), **params)]
    )


def ensure_model(builder: Any, alias: str, run: RunContext) -> None:
    """Give `builder` the model config for `alias` unless the pipeline already brought one.

    A pipeline's own config for the alias wins (it may set judge-specific parameters); adding
    a second one would be refused by DataDesigner.
    """
    if any(config.alias == alias for config in builder.model_configs):
        return
    if run.models is None:
        raise RuntimeError("the llm-rubric judge needs a RunContext with a ModelSession")
    builder.add_model_config(model_config(run.models.resolve(alias)))


def add_rubric_judge(
    builder: Any,
    run: RunContext,
    *,
    column: str,
    rubric: Rubric,
    model_alias: str,
    prompt: str | None = None,
    skip: dd.SkipConfig | None = None,
    prompt_column: str = "prompt",
    response_column: str = "response",
    thresholds: Mapping[str, int] | None = None,
    drop_below: bool = True,
    filter_name: str | None = None,
    keep_rules: Sequence[FilterRule] = (),
) -> None:
    """Add `rubric`'s judge column `column` (with its model config) and the keep filter.

    The filter `filter_name` (default `<column>-thresholds`) holds `keep_rules` (the caller's
    own reasons, checked first) then, with `drop_below`, one rule per criterion threshold; it
    is left out when that leaves no rule. `skip` skips the judge for rows that need no verdict.
    """
    ensure_model(builder, model_alias, run)
    judge = judge_column(
        column,
        rubric,
        model_alias=model_alias,
        prompt_column=prompt_column,
        response_column=response_column,
        prompt=prompt,
    )
    builder.add_column(judge if skip is None else judge.model_copy(update={"skip": skip}))
    rules = list(keep_rules)
    if drop_below:
        rules += threshold_rules(column, rubric, thresholds or None)
    if rules:
        add_filter(builder, filter_name or f"{column}-thresholds", rules)
