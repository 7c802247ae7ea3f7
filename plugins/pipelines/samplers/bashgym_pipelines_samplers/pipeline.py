"""Diversity without a model: weighted category samplers plus Jinja expression columns.

Useful on its own (tag seed tasks with a category and a difficulty before handing them to
agents) and as the smallest proof that a pipeline plugin drives the real DataDesigner engine.
"""

from __future__ import annotations

from typing import Any

import data_designer.config as dd
from pydantic import Field, model_validator

from bashgym.contracts import Pipeline, PipelineOptions, RunContext

DEFAULT_CATEGORIES = {
    "task_category": ["bug fix", "feature", "refactor", "tests", "docs"],
    "difficulty": ["easy", "medium", "hard"],
}


class SamplersOptions(PipelineOptions):
    categories: dict[str, list[str]] = Field(
        default_factory=lambda: dict(DEFAULT_CATEGORIES),
        description="Category sampler columns: column = [values].",
    )
    weights: dict[str, list[float]] = Field(
        default_factory=dict, description="Optional weights per category column (same length)."
    )
    expressions: dict[str, str] = Field(
        default_factory=dict,
        description="Expression columns: column = Jinja template over other columns.",
    )

    @model_validator(mode="after")
    def _check(self) -> SamplersOptions:
        if not self.categories and not self.expressions:
            raise ValueError("give at least one category or expression column")
        for column, weights in self.weights.items():
            values = self.categories.get(column)
            if values is None:
                raise ValueError(f"weights for unknown category column {column!r}")
            if len(weights) != len(values):
                raise ValueError(f"{column!r} has {len(values)} values but {len(weights)} weights")
        for column, values in self.categories.items():
            if not values:
                raise ValueError(f"category column {column!r} has no values")
        return self


class SamplersPipeline(Pipeline[SamplersOptions]):
    """Sampler and expression columns over seed rows (or alone): no model calls."""

    runner = "datadesigner"

    output_format = "rows"

    def build(self, options: SamplersOptions, run: RunContext, seed: Any) -> Any:
        builder = dd.DataDesignerConfigBuilder()
        for column, values in options.categories.items():
            params = dd.CategorySamplerParams(values=values, weights=options.weights.get(column))
            builder.add_column(
                dd.SamplerColumnConfig(name=column, sampler_type="category", params=params)
            )
        for column, template in options.expressions.items():
            builder.add_column(dd.ExpressionColumnConfig(name=column, expr=template))
        return builder
