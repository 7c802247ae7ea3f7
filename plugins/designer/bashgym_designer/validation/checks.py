"""`CodeCheck`: one language's checker run over many code cells at once.

It strips a single markdown fence wrapping the whole cell (DataDesigner's validator lints
```python ...``` as code and fails it), checks a missing cell as empty code instead of failing
the batch, and then runs DataDesigner's own `PythonValidator` (ruff, same rules and scores) or
`SQLValidator` (sqlfluff), or the shell checks of `shell.py` (DataDesigner has none).

Empty code is VALID: there is nothing to check, and ruff, sqlfluff and `bash -n` all accept
it. Results say `empty: true` so a rule can still drop empty answers.

Every result has `is_valid`, `error_messages` (text, "" when valid), `empty` and `language`;
Python results add DataDesigner's `python_linter_score`, `python_linter_severity` and
`python_linter_messages`, shell results `shellcheck` findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bashgym.text import plain
from bashgym_designer.validation.languages import normalize_language
from bashgym_designer.validation.shell import check_shell_many

# DataDesigner is imported inside the checkers: this module is imported during DataDesigner's
# plugin discovery (through `bashgym_designer.validation`), in the middle of importing
# `data_designer.config`, which `data_designer.config`/`data_designer.engine` would re-enter.

_FENCE = re.compile(r"\A\s*(`{3,}|~{3,})[^\n]*\n(.*?)\n?[ \t]*\1\s*\Z", re.DOTALL)


def strip_fence(text: Any) -> str:
    """The code inside one markdown fence wrapping the whole text; other text unchanged.

    None/NaN become "" so a missing answer is checked as empty code, not a crash.
    """
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
        return check_shell_many(codes, self.language)


def _check_python(codes: list[str]) -> list[dict[str, Any]]:
    import data_designer.config as dd  # see top
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
    import data_designer.config as dd  # see top
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
