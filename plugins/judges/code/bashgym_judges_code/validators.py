"""Validation columns for code: ruff for Python, sqlfluff for SQL, `bash -n` for shell.

One column per target, each a full-column DataDesigner custom column around a `CodeCheck`,
NOT DataDesigner's `ValidationColumnConfig`, because its generator has two bugs in 0.9.6:
- with several `target_columns`, every row of the second and later targets gets row 0's
  result;
- it joins its results to the batch by position while the batch keeps the row numbers of the
  surviving rows, so once any earlier column dropped a row of a row group (an LLM reply that
  failed to parse), the validation returns too many rows and DataDesigner discards the WHOLE
  row group.

`CodeCheck` strips a single markdown fence wrapping the whole cell (DataDesigner's validator
lints ```python ...``` as code and fails it), checks a missing cell as empty code instead of
failing the batch, and then runs DataDesigner's own `PythonValidator` (ruff, same rules and
scores) or `SQLValidator` (sqlfluff), or the shell checks of `shell.py`.

Empty code is VALID: there is nothing to check, and ruff, sqlfluff and `bash -n` all accept
it. Results say `empty: true` so a rule can still drop empty answers.

Every result has `is_valid`, `error_messages` (text, "" when valid), `empty` and `language`;
Python results add DataDesigner's `python_linter_score`, `python_linter_severity` and
`python_linter_messages`, shell results `shellcheck` findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bashgym_judges_filter import FilterRule

from bashgym.contracts import InputError

if TYPE_CHECKING:
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder

SQL_DIALECTS = ("ansi", "bigquery", "mysql", "postgres", "sqlite", "tsql")
SHELLS = {"bash": "bash", "shell": "bash", "sh": "sh"}
_FENCE = re.compile(r"\A\s*(`{3,}|~{3,})[^\n]*\n(.*?)\n?[ \t]*\1\s*\Z", re.DOTALL)


def normalize_language(language: str) -> str:
    """'python' | 'sql:<dialect>' | 'bash' | 'sh'; InputError naming the known ones otherwise.

    Plain 'sql' means ANSI SQL.
    """
    lang = language.strip().lower()
    if lang in ("python", "py"):
        return "python"
    if lang == "sql":
        return "sql:ansi"
    if lang.startswith("sql:"):
        if lang[4:] in SQL_DIALECTS:
            return lang
        raise InputError(
            f"unknown SQL dialect {language!r}: use 'sql' (ANSI) or one of "
            + ", ".join(f"sql:{d}" for d in SQL_DIALECTS)
        )
    if lang in SHELLS:
        return SHELLS[lang]
    raise InputError(
        f"cannot validate language {language!r}: use python, sql, sql:<dialect>, bash, sh or shell"
    )


def tool_name(language: str) -> str:
    """The checker behind a language, as drop reasons name it."""
    lang = normalize_language(language)
    if lang == "python":
        return "ruff"
    if lang.startswith("sql:"):
        return f"sqlfluff ({lang[4:]})"
    import shutil

    return "bash -n/shellcheck" if shutil.which("shellcheck") else "bash -n"


def strip_fence(text: Any) -> str:
    """The code inside one markdown fence wrapping the whole text; other text unchanged.

    None/NaN become "" so a missing answer is checked as empty code, not a crash.
    """
    from bashgym.split import plain

    value = plain(text)
    if value is None:
        return ""
    value = value if isinstance(value, str) else str(value)
    match = _FENCE.match(value)
    if match is None:
        return value
    marker, inner = match.group(1), match.group(2)
    # Two blocks one after the other also start and end with a fence: leave those alone.
    if re.search(rf"^[ \t]*{re.escape(marker)}", inner, re.MULTILINE):
        return value
    return inner


class CodeCheck:
    """Checks the code of one language, many snippets at a time."""

    def __init__(self, language: str) -> None:
        self.language = normalize_language(language)
        self.name = f"bashgym_code_check[{self.language}]"

    def __call__(self, cells: Iterable[Any]) -> list[dict[str, Any]]:
        """One result dict per cell, in order."""
        codes = [strip_fence(cell) for cell in cells]
        results = self.check(codes)
        for code, result in zip(codes, results, strict=True):
            result["empty"] = not code.strip()
            result["language"] = self.language
        return results

    def check(self, codes: list[str]) -> list[dict[str, Any]]:
        if not codes:
            return []
        if self.language == "python":
            return _check_python(codes)
        if self.language.startswith("sql:"):
            return _check_sql(codes, self.language)
        from bashgym_judges_code.shell import check_shell_many

        return check_shell_many(codes, self.language)


def _check_python(codes: list[str]) -> list[dict[str, Any]]:
    import data_designer.config as dd
    from data_designer.engine.validators import PythonValidator

    validator = PythonValidator(dd.CodeValidatorParams(code_lang=dd.CodeLang.PYTHON))
    outputs = validator.run_validation([{"code": code} for code in codes])
    results = []
    for output in outputs:
        result = output.model_dump(mode="json")
        blocking = [
            m
            for m in result.get("python_linter_messages") or []
            if m.get("type") in ("fatal", "error")
        ]
        result["error_messages"] = "\n".join(
            f"line {m['line']}:{m['column']}: {m['symbol']} {m['message']}" for m in blocking
        )
        results.append(result)
    return results


def _check_sql(codes: list[str], language: str) -> list[dict[str, Any]]:
    import data_designer.config as dd
    from data_designer.engine.validators import SQLValidator

    validator = SQLValidator(dd.CodeValidatorParams(code_lang=language))
    # Blank code is valid (nothing to check; sqlfluff agrees): no need to spend a lint on it.
    outputs = [
        {"is_valid": True, "error_messages": ""}
        if not code.strip()
        else validator.run_validation([{"code": code}]).data[0].model_dump(mode="json")
        for code in codes
    ]
    return [
        {"is_valid": o.get("is_valid"), "error_messages": o.get("error_messages") or ""}
        for o in outputs
    ]


def add_validation(
    builder: DataDesignerConfigBuilder, target: str, language: str, *, name: str | None = None
) -> str:
    """Add one validation column checking `target` as `language`; returns the column's name
    (default f"{target}_validation"). Its value is a dict with at least `is_valid`."""
    import data_designer.config as dd

    column = name or f"{target}_validation"
    builder.add_column(
        dd.CustomColumnConfig(
            name=column,
            generator_function=validation_function(target, column, language),
            generation_strategy=dd.GenerationStrategy.FULL_COLUMN,
        )
    )
    return column


def validation_function(target: str, column: str, language: str) -> Any:
    """The custom-column function writing `CodeCheck(language)` results of `target` into
    `column`, row for row (the batch's index is kept)."""
    import data_designer.config as dd

    check = CodeCheck(language)

    def generate(df: pd.DataFrame) -> pd.DataFrame:
        out = df.copy()
        out[column] = check(df[target].tolist())
        return out

    # DataDesigner writes a custom column's function into saved configs by its name.
    generate.__name__ = generate.__qualname__ = check.name
    return dd.custom_column_generator(required_columns=[target])(generate)


def valid_rule(validation_column: str, target: str, language: str) -> FilterRule:
    """Keep rows whose `validation_column` says the code is valid."""
    lang = normalize_language(language)
    return FilterRule(
        keep=f"{{{{ {validation_column}.is_valid }}}}",
        reason=f"code: {lang} in {target} fails {tool_name(lang)}",
    )
