"""The `bashgym-code-validation` column config: what a DataDesigner config (and its file) holds.

Kept apart from the implementation on purpose. DataDesigner imports this module while it
discovers plugins, i.e. in the middle of importing `data_designer.config`; so it imports only
`data_designer.config.base` (which imports nothing else of DataDesigner), pydantic and the
dependency-free `languages` module. Being a plain config (no Python function inside, unlike a
custom column), it survives `builder.write_config()` and `DataDesignerConfigBuilder.from_config()`,
so pipelines using it can be exported and run by the `data-designer` CLI.
"""

from __future__ import annotations

from typing import Literal

from data_designer.config.base import SingleColumnConfig
from pydantic import Field, field_validator

from bashgym_designer.validation.languages import normalize_language

COLUMN_TYPE = "bashgym-code-validation"


class CodeValidationColumnConfig(SingleColumnConfig):
    """Check the code in `target_column` as `language`; the value is a dict with `is_valid`,
    `error_messages`, `empty`, `language` and the checker's details (python_linter_* for
    Python, shellcheck findings for shell).

    One target per column on purpose: DataDesigner's multi-target `ValidationColumnConfig`
    copies row 0's result into every row of the second and later targets.
    """

    target_column: str = Field(min_length=1, description="The column holding the code to check.")
    language: str = Field(
        description="python | sql (ANSI) | sql:<dialect> (ansi, bigquery, mysql, postgres, "
        "sqlite, tsql) | bash | sh | shell; stored normalized (sql -> sql:ansi, shell -> bash).",
    )
    column_type: Literal["bashgym-code-validation"] = COLUMN_TYPE

    @field_validator("language")
    @classmethod
    def _known_language(cls, language: str) -> str:
        return normalize_language(language)

    @staticmethod
    def get_column_emoji() -> str:
        return "🔍"

    @property
    def required_columns(self) -> list[str]:
        """The target, so DataDesigner generates it before this column."""
        return [self.target_column]

    @property
    def side_effect_columns(self) -> list[str]:
        return []
