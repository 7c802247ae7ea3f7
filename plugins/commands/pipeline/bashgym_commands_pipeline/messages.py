"""DataDesigner's output made fit for a terminal: kept off the screen, condensed to one line.

DataDesigner logs at INFO, prints boxed violation panels to stdout, and raises errors that say
"see the warnings above". On `bashgym validate|preview|pipeline export` that output would bury
the result (and corrupt `--json`), so it goes to the run's log file, and what the user sees is
one line: the exception condensed, plus the log's warnings when the exception points at them.

That log is written redacted, line by line, with the run's `run.redact`, as a run's is (README
"Secret scrubbing"): DataDesigner's warnings quote a model's answer that does not match its
schema and a provider's error message, and the one line shown quotes the log.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bashgym_designer.designer import route_logs

from bashgym.text import condense, one_line

if TYPE_CHECKING:
    from bashgym.contracts import RunContext

__all__ = ["condense", "log_problems", "one_line", "quiet"]

_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (\w+) \S+?: ?(.*)$")
_ROW_TAG = re.compile(r"\[rg=\d+, row=\d+\]")


@contextlib.contextmanager
def quiet(run: RunContext) -> Iterator[Path]:
    """DataDesigner's logs (and this library's) into the run's log file (yielded), redacted;
    its stdout panels there too, redacted, not on screen (they would corrupt `--json` output).
    """
    log_file = run.run_dir / "logs" / "datadesigner.log"
    handler = route_logs(log_file, run.redact)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield log_file
    finally:
        handler.close()  # detaches it from every logger route_logs put it on
        if buffer.getvalue().strip():
            with log_file.open("a") as fh:
                fh.write(run.redact(buffer.getvalue()))


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
