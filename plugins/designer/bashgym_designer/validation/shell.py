"""Shell checks: `bash -n` for syntax, plus `shellcheck` errors when it is installed.

DataDesigner has no shell validator, so BashGym brings its own. Each snippet is written to
its own temp file and checked in a thread pool (the work is in the subprocesses, so threads
parallelize it). A check that cannot run (a timeout, a missing
`bash`) makes the row invalid with the error text, never valid by default.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

TIMEOUT_S = 10.0
MAX_WORKERS = 8


def check_shell(code: str, dialect: str = "bash") -> dict[str, Any]:
    """One snippet's result: `is_valid`, `error_messages` (text) and `shellcheck` findings.

    `dialect` is "bash" or "sh" (shellcheck's `--shell`); syntax is checked with `bash -n`
    either way. Shellcheck findings of level "error" make the snippet invalid; warnings and
    notes are kept in `shellcheck` for whoever wants to score them.
    """
    with tempfile.TemporaryDirectory(prefix="bashgym-shell-") as folder:
        path = Path(folder) / "snippet.sh"
        path.write_text(code, encoding="utf-8")
        errors: list[str] = []
        syntax_ok, syntax_error = _bash_syntax(path)
        if not syntax_ok:
            errors.append(syntax_error)
        findings = _shellcheck(path, dialect) if shutil.which("shellcheck") else []
        errors += [_finding_text(f) for f in findings if f.get("level") == "error"]
    return {
        "is_valid": not errors,
        "error_messages": "\n".join(errors),
        "shellcheck": [_finding_text(f) for f in findings],
    }


def check_shell_many(codes: Sequence[str], dialect: str = "bash") -> list[dict[str, Any]]:
    """`check_shell` over many snippets in parallel, results in input order."""
    workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1, len(codes)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda code: check_shell(code, dialect), codes))


def _bash_syntax(path: Path) -> tuple[bool, str]:
    bash = shutil.which("bash")
    if bash is None:
        return False, "bash not found on PATH: syntax not checked"
    try:
        proc = subprocess.run(
            [bash, "-n", str(path)], capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return False, f"bash -n timed out after {TIMEOUT_S:g}s"
    # bash names the temp file in each message; the line number is what matters.
    text = proc.stderr.replace(f"{path}: ", "").strip()
    return proc.returncode == 0, text or f"bash -n exited with {proc.returncode}"


def _shellcheck(path: Path, dialect: str) -> list[dict[str, Any]]:
    """Shellcheck's findings as dicts (level, code, line, message); one error when it fails."""
    try:
        proc = subprocess.run(
            ["shellcheck", "-f", "json", "-s", dialect, str(path)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        return [{"level": "error", "code": 0, "line": 0, "message": f"shellcheck: {exc}"}]
    try:
        return [f for f in json.loads(proc.stdout or "[]") if isinstance(f, dict)]
    except json.JSONDecodeError:
        message = (proc.stderr or proc.stdout).strip() or f"exit {proc.returncode}"
        return [{"level": "error", "code": 0, "line": 0, "message": f"shellcheck: {message}"}]


def _finding_text(finding: dict[str, Any]) -> str:
    return (
        f"line {finding.get('line', '?')}: SC{finding.get('code', '?')} "
        f"({finding.get('level', '?')}) {finding.get('message', '')}"
    )
