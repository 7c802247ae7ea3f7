"""DataDesigner's output made fit for a terminal: kept off the screen, condensed to one line.

DataDesigner logs at INFO, prints boxed violation panels to stdout, and raises errors that say
"see the warnings above". On `bashgym validate|preview|pipeline export` that output would bury
the result (and corrupt `--json`), so it goes to the run's log file, and what the user sees is
one line: the exception condensed, plus the log's warnings when the exception points at them.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

MAX_MESSAGE = 300

_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (\w+) \S+?: ?(.*)$")
_ROW_TAG = re.compile(r"\[rg=\d+, row=\d+\]")


def one_line(exc: BaseException) -> str:
    """`Type: message` on one line: DataDesigner's boxed multi-line errors condensed; a pydantic
    error names its model, the field and the message (its first line only counts the errors)."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
        )
        return f"invalid {exc.title}: {problems}"
    text = condense(str(exc).splitlines())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def condense(lines: list[str]) -> str:
    """Lines of a DataDesigner message as one line, without its box rules, bars and emoji."""
    pieces = [ln.strip().strip("|-🛑⚠️🔔 ").strip() for ln in lines]
    text = re.sub(r"\s+", " ", " ".join(p for p in pieces if p)).strip()
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


@contextlib.contextmanager
def quiet(run_dir: Path) -> Iterator[Path]:
    """DataDesigner's logs into the run's log file (yielded); its stdout panels there too, not
    on screen (they would corrupt `--json` output)."""
    from bashgym.designer import route_logs

    log_file = run_dir / "logs" / "datadesigner.log"
    handler = route_logs(log_file)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield log_file
    finally:
        logging.getLogger("data_designer").removeHandler(handler)
        handler.close()
        if buffer.getvalue().strip():
            with log_file.open("a") as fh:
                fh.write(buffer.getvalue())


def log_problems(log_file: Path, most: int = 3) -> str:
    """`: warning; warning` from DataDesigner's log: its exceptions say "see the warnings
    above", which went to the log, not the terminal. Per-row repeats are counted once."""
    if not log_file.is_file():
        return ""
    records: list[tuple[str, list[str]]] = []
    for line in log_file.read_text(errors="replace").splitlines():
        match = _LOG_RECORD.match(line)
        if match:
            records.append((match.group(1), [match.group(2)]))
        elif records:
            records[-1][1].append(line)  # a multi-line record continues
    seen: list[str] = []
    for level, lines in records:
        text = condense([_ROW_TAG.sub("", ln) for ln in lines])
        if level in ("WARNING", "ERROR") and text and text not in seen:
            seen.append(text)
    return (": " + "; ".join(seen[:most])) if seen else ""
