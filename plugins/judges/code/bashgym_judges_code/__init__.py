"""BashGym judges/code: code validation columns (ruff for Python, sqlfluff for SQL, bash -n and
shellcheck for shell) and a judge that drops rows whose code fails them."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_judges_code.judge import CodeJudge, CodeOptions
from bashgym_judges_code.validators import (
    CodeCheck,
    add_validation,
    normalize_language,
    strip_fence,
    valid_rule,
)

__all__ = [
    "CodeCheck",
    "CodeJudge",
    "CodeOptions",
    "add_validation",
    "normalize_language",
    "strip_fence",
    "valid_rule",
]


@hookimpl
def register_judges(register):
    register("code", CodeJudge())
