"""BashGym judges/code: the `code` judge, which adds a validation column per code column (ruff
for Python, sqlfluff for SQL, bash -n and shellcheck for shell) and drops rows whose code fails.

The column (a DataDesigner plugin), the checkers and the keep rule live in the shared library
`bashgym_designer.validation`.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_judges_code.judge import CodeJudge, CodeOptions

__all__ = ["CodeJudge", "CodeOptions"]


@hookimpl
def register_judges(register):
    register("code", CodeJudge())
