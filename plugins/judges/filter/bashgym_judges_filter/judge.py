"""The `filter` judge: a `bashgym-filter` processor (`bashgym_designer.filters`) on the run's
builder, dropping rows that fail the user's Jinja keep rules, each drop recorded with its reason."""

from __future__ import annotations

from typing import Any

from bashgym_designer.filters import FilterRule, add_filter
from pydantic import Field

from bashgym.contracts import Judge, Options, RunContext


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


class FilterJudge(Judge[FilterOptions]):
    """Drop rows failing Jinja keep conditions (inside DataDesigner), recording each reason."""

    runner = "datadesigner"

    def configure(self, builder: Any, options: FilterOptions, run: RunContext) -> None:
        add_filter(builder, options.name, options.rules)
