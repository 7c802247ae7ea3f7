"""Code validation columns: the `bashgym-code-validation` DataDesigner column (ruff for Python,
sqlfluff for SQL, `bash -n` and shellcheck for shell) and the keep rule for valid code.

`add_validation(builder, target, language)` adds one column checking `target`; `valid_rule`
keeps the rows it says are valid (for `bashgym_designer.filters.add_filter`); `CodeCheck` runs
one language's checker over many cells outside DataDesigner.

DataDesigner's plugin discovery imports this package (for `validation.plugin`) while
`data_designer.config` is itself importing, so nothing here imports more of DataDesigner than
`data_designer.config.base` at module level.
"""

from __future__ import annotations

from bashgym_designer.validation.config import CodeValidationColumnConfig
from bashgym_designer.validation.validators import (
    SHELLS,
    SQL_DIALECTS,
    CodeCheck,
    add_validation,
    normalize_language,
    strip_fence,
    tool_name,
    valid_rule,
)

__all__ = [
    "SHELLS",
    "SQL_DIALECTS",
    "CodeCheck",
    "CodeValidationColumnConfig",
    "add_validation",
    "normalize_language",
    "strip_fence",
    "tool_name",
    "valid_rule",
]
