"""The `bashgym-filter` processor config: what a DataDesigner config (and its JSON) holds.

Kept apart from the implementation on purpose. DataDesigner imports this module while it
discovers plugins, i.e. in the middle of importing `data_designer.config`; so it may import
only `data_designer.config.base` (which imports nothing else of DataDesigner) and pydantic.
"""

from __future__ import annotations

from typing import Literal

from data_designer.config.base import ProcessorConfig
from pydantic import Field

from bashgym_designer.filters.rules import FilterRule

PROCESSOR_TYPE = "bashgym-filter"


class FilterProcessorConfig(ProcessorConfig):
    """Drop rows failing any rule, after generation; each dropped row is recorded with why."""

    rules: list[FilterRule] = Field(min_length=1, description="Keep rules, checked in order.")
    processor_type: Literal["bashgym-filter"] = PROCESSOR_TYPE
