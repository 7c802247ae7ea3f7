"""Per-column progress while DataDesigner generates, as the run's own `RowsGenerated` events.

DataDesigner finishes rows a batch (`buffer_size` rows) at a time, so the pipeline step's row
count stands still for a whole batch: a small run reads `pipeline: 0/12 done` until it ends.
Inside a batch, DataDesigner's progress reporter knows how many cells of each column are done
and says so in its log, every `progress_interval` seconds (RunConfig, 5 s by default) and once
at the end. 0.9 offers no callback for it, so a logging handler reads those records — by their
arguments (label, done, total), not their text — and emits `RowsGenerated(step="pipeline
column NAME", n=new cells, total=cells)`. The progress display shows them under the pipeline
step; events.jsonl keeps them. Should DataDesigner change the record, no column progress is
shown and nothing else changes (the tests say so at once).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bashgym.contracts import RunContext
from bashgym.events import RowsGenerated

# The loggers of DataDesigner's async reporter and its per-column tracker (both report
# "LABEL: done/total" with the label, done and total as arguments 2, 3 and 4).
LOGGERS = ("data_designer.engine.progress.reporter", "data_designer.engine.progress.tracker")
COLUMN_STEP = "pipeline column {}"  # the step name the progress display nests under pipeline
LABEL = re.compile(r"column '(?P<name>.+)'")


class ColumnProgress(logging.Handler):
    """Turns DataDesigner's per-column progress records into RowsGenerated events."""

    def __init__(self, run: RunContext, step: str = COLUMN_STEP) -> None:
        """`step`: the event's step name, `{}` the column (a round after the first says so,
        as DataDesigner counts each round from zero)."""
        super().__init__(level=logging.INFO)
        self.run, self.step = run, step
        self.done: dict[str, int] = {}
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        # inside DataDesigner's own logging call: a failure here must never reach its engine
        try:
            self._report(record)
        except Exception:  # noqa: BLE001 -- logging's own policy for a handler that fails
            self.handleError(record)

    def _report(self, record: logging.LogRecord) -> None:
        found = progress_of(record)
        if found is None:
            return
        column, done, total = found
        with self._lock:
            seen = column in self.done
            new = done - self.done.get(column, 0)
            if new <= 0 and seen:  # a column first seen at 0 is news: it is under way
                return
            self.done[column] = max(done, self.done.get(column, 0))
        self.run.emit(RowsGenerated(step=self.step.format(column), n=max(new, 0), total=total))


def progress_of(record: logging.LogRecord) -> tuple[str, int, int] | None:
    """(column, cells done, cells in all) of a DataDesigner progress record, else None."""
    args = record.args
    if not isinstance(args, tuple) or len(args) < 5 or "%d/%d" not in str(record.msg):
        return None
    label, done, total = args[2], args[3], args[4]
    if not isinstance(label, str) or not isinstance(done, int) or not isinstance(total, int):
        return None
    match = LABEL.search(label)
    return (match["name"] if match else label), done, total


@contextmanager
def column_progress(run: RunContext, round: int = 1) -> Iterator[ColumnProgress]:
    """Report DataDesigner's per-column progress as events while the block runs."""
    handler = ColumnProgress(run, COLUMN_STEP + (f" (round {round})" if round > 1 else ""))
    loggers = [logging.getLogger(name) for name in LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
