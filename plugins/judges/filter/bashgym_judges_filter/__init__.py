"""BashGym judges/filter: a DataDesigner processor that drops rows by Jinja conditions and
records each dropped row with its reason.

This package is imported by DataDesigner's plugin discovery (while `data_designer.config`
is itself importing), so it stays light: nothing here imports DataDesigner at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bashgym import hookimpl
from bashgym_judges_filter.judge import FilterJudge, FilterOptions, add_filter, filter_processor
from bashgym_judges_filter.rules import FilterRule

if TYPE_CHECKING:
    from bashgym_judges_filter.config import FilterProcessorConfig

__all__ = [
    "FilterJudge",
    "FilterOptions",
    "FilterProcessorConfig",
    "FilterRule",
    "add_filter",
    "filter_processor",
]


def __getattr__(name: str) -> Any:
    if name == "FilterProcessorConfig":
        from bashgym_judges_filter.config import FilterProcessorConfig

        return FilterProcessorConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_judges(register):
    register("filter", FilterJudge())
