"""What a `--set KEY=VALUE` may not be, whichever command reads it.

Python's JSON and TOML readers, and pydantic's float parsing of text, all take `inf`, `1e999`,
`Infinity` and `nan` as numbers. No BashGym option means "no limit" by infinity (None does), and
a NaN compares false with every bound, so `timeout_s=1e999` would pass a `gt=0` check and mean
no timeout at all. The command line refuses them by name instead.
"""

from __future__ import annotations

import math
from typing import Any


def non_finite(value: Any) -> bool:
    """True for an infinite or NaN float, or text that a float field would read as one."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, str):
        try:
            return not math.isfinite(float(value))
        except ValueError:
            return False
    return False
