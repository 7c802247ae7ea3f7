"""Validation columns for code (ruff for Python, sqlfluff for SQL, `bash -n` for shell) and
the filter rule keeping valid rows.

Each column is a `bashgym-code-validation` column (this package's DataDesigner plugin, see
`config.py` and `generator.py`), NOT DataDesigner's `ValidationColumnConfig`, whose generator
has two bugs in 0.9.6:
- with several `target_columns`, every row of the second and later targets gets row 0's
  result;
- it joins its results to the batch by position while the batch keeps the row numbers of the
  surviving rows, so once any earlier column dropped a row of a row group (an LLM reply that
  failed to parse), the validation returns too many rows and DataDesigner discards the WHOLE
  row group.
Nor a custom column with a Python function, which `DataDesignerConfigBuilder.from_config()`
cannot load back: the plugin column is plain data, so the config can be exported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bashgym_designer.filters import FilterRule
from bashgym_designer.validation.checks import CodeCheck, strip_fence
from bashgym_designer.validation.config import CodeValidationColumnConfig
from bashgym_designer.validation.languages import (
    SHELLS,
    SQL_DIALECTS,
    normalize_language,
    tool_name,
)

if TYPE_CHECKING:
    from data_designer.config import DataDesignerConfigBuilder

__all__ = [
    "SHELLS",
    "SQL_DIALECTS",
    "CodeCheck",
    "add_validation",
    "normalize_language",
    "strip_fence",
    "tool_name",
    "valid_rule",
]


def add_validation(
    builder: DataDesignerConfigBuilder, target: str, language: str, *, name: str | None = None
) -> str:
    """Add one validation column checking `target` as `language`; returns the column's name
    (default f"{target}_validation"). Its value is a dict with at least `is_valid`."""
    column = name or f"{target}_validation"
    builder.add_column(
        CodeValidationColumnConfig(name=column, target_column=target, language=language)
    )
    return column


def valid_rule(validation_column: str, target: str, language: str) -> FilterRule:
    """Keep rows whose `validation_column` says the code is valid."""
    lang = normalize_language(language)
    return FilterRule(
        keep=f"{{{{ {validation_column}.is_valid }}}}",
        reason=f"code: {lang} in {target} fails {tool_name(lang)}",
    )
