"""The languages the code judge checks, and which checker each one runs.

Kept free of DataDesigner imports: the plugin's column config validates its `language` with
`normalize_language` while DataDesigner discovers plugins (mid-import of
`data_designer.config`), and a saved config is re-validated whenever it is loaded.
"""

from __future__ import annotations

import shutil

from bashgym.contracts import InputError

SQL_DIALECTS = ("ansi", "bigquery", "mysql", "postgres", "sqlite", "tsql")
SHELLS = {"bash": "bash", "shell": "bash", "sh": "sh"}


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
    return "bash -n/shellcheck" if shutil.which("shellcheck") else "bash -n"
