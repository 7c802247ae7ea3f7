"""The `filter` judge and the helpers other judges use to add a filter to a pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from bashgym.contracts import Judge, Options, RunContext
from bashgym_judges_filter.rules import FilterRule

if TYPE_CHECKING:
    from data_designer.config import DataDesignerConfigBuilder

    from bashgym_judges_filter.config import FilterProcessorConfig


def filter_processor(name: str, rules: list[FilterRule]) -> FilterProcessorConfig:
    """A DataDesigner processor config dropping rows that fail `rules` (checked in order)."""
    from bashgym_judges_filter.config import FilterProcessorConfig

    return FilterProcessorConfig(name=name, rules=list(rules))


def add_filter(builder: DataDesignerConfigBuilder, name: str, rules: list[FilterRule]) -> None:
    """Add (or replace, by name) a `bashgym-filter` processor on `builder`."""
    builder.add_processor(filter_processor(name, rules))


class FilterOptions(Options):
    name: str = Field(
        default="filter",
        min_length=1,
        description="Processor name; drops are reported as 'filter <name>'.",
    )
    rules: list[FilterRule] = Field(
        min_length=1,
        description="Keep rules: {keep: '{{ jinja condition }}', reason: 'why dropped'}.",
    )


class FilterJudge(Judge):
    """Drop rows failing Jinja keep conditions (inside DataDesigner), recording each reason."""

    Options = FilterOptions

    def configure(self, builder: Any, options: FilterOptions, run: RunContext) -> None:
        add_filter(builder, options.name, options.rules)
