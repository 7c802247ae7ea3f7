"""Keep filters: the `bashgym-filter` DataDesigner processor, which drops rows failing Jinja keep
rules after generation and records each dropped row with its reason (`bashgym_designer.drops`).

`add_filter(builder, name, rules)` puts one on a builder; `FilterRule` is one keep condition and
the reason a row failing it is dropped.

DataDesigner's plugin discovery imports this package (for `filters.plugin`) while
`data_designer.config` is itself importing, so nothing here imports more of DataDesigner than
`data_designer.config.base` (which imports no other DataDesigner module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bashgym_designer.filters.config import FilterProcessorConfig
from bashgym_designer.filters.rules import FilterRule

if TYPE_CHECKING:
    from data_designer.config import DataDesignerConfigBuilder

__all__ = ["FilterProcessorConfig", "FilterRule", "add_filter", "filter_processor"]


def filter_processor(name: str, rules: Sequence[FilterRule]) -> FilterProcessorConfig:
    """A DataDesigner processor config dropping rows that fail `rules` (checked in order)."""
    return FilterProcessorConfig(name=name, rules=list(rules))


def add_filter(builder: DataDesignerConfigBuilder, name: str, rules: Sequence[FilterRule]) -> None:
    """Add (or replace, by name) a `bashgym-filter` processor on `builder`."""
    builder.add_processor(filter_processor(name, rules))
