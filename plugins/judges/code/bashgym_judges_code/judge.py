"""The `code` judge: a validation column per code column, and a filter dropping invalid code
(both from `bashgym_designer`: `validation` and `filters`)."""

from __future__ import annotations

from typing import Any

from bashgym_designer.filters import add_filter
from bashgym_designer.validation import add_validation, normalize_language, valid_rule
from pydantic import Field, field_validator

from bashgym.contracts import Judge, Options, RunContext


class CodeOptions(Options):
    targets: dict[str, str] = Field(
        min_length=1,
        description="Columns to check: column = language (python, sql, sql:<dialect>, bash, sh).",
    )
    drop_invalid: bool = Field(
        default=True, description="Drop rows whose code fails its check (each drop recorded)."
    )
    name: str = Field(default="code", min_length=1, description="Name of the filter it adds.")

    @field_validator("targets")
    @classmethod
    def _check_languages(cls, targets: dict[str, str]) -> dict[str, str]:
        for language in targets.values():
            normalize_language(language)
        return targets


class CodeJudge(Judge[CodeOptions]):
    """Check code columns (ruff, sqlfluff, bash -n) and drop rows with invalid code."""

    runner = "datadesigner"

    def configure(self, builder: Any, options: CodeOptions, run: RunContext) -> None:
        rules = []
        for target, language in options.targets.items():
            column = add_validation(builder, target, language)
            rules.append(valid_rule(column, target, language))
        if options.drop_invalid:
            add_filter(builder, options.name, rules)
