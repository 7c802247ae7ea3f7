"""BashGym judges/code: code validation columns (ruff for Python, sqlfluff for SQL, bash -n and
shellcheck for shell) and a judge that drops rows whose code fails them.

The column is a DataDesigner column-generator plugin (`bashgym-code-validation`), so this
package is imported by DataDesigner's plugin discovery while `data_designer.config` is itself
importing: nothing imported here imports DataDesigner at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bashgym import hookimpl
from bashgym_judges_code.judge import CodeJudge, CodeOptions
from bashgym_judges_code.validators import (
    CodeCheck,
    add_validation,
    normalize_language,
    strip_fence,
    valid_rule,
)

if TYPE_CHECKING:
    from bashgym_judges_code.config import CodeValidationColumnConfig

__all__ = [
    "CodeCheck",
    "CodeJudge",
    "CodeOptions",
    "CodeValidationColumnConfig",
    "add_validation",
    "normalize_language",
    "strip_fence",
    "valid_rule",
]


def __getattr__(name: str) -> Any:
    if name == "CodeValidationColumnConfig":
        from bashgym_judges_code.config import CodeValidationColumnConfig

        return CodeValidationColumnConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_judges(register):
    register("code", CodeJudge())
