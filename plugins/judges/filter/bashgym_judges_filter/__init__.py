"""BashGym judges/filter: the `filter` judge, which drops rows by Jinja keep conditions and
records each dropped row with its reason.

The processor doing the work, `add_filter` and `FilterRule` live in the shared library
`bashgym_designer.filters`.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_judges_filter.judge import FilterJudge, FilterOptions

__all__ = ["FilterJudge", "FilterOptions"]


@hookimpl
def register_judges(register):
    register("filter", FilterJudge())
