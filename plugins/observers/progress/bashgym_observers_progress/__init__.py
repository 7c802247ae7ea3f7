"""BashGym run progress (a default plugin): a live display on a terminal, plain lines otherwise.

An `on_event` subscriber like any other: a display opens on the run's `RunStarted` (saying
first when the run resumes an interrupted one, or one `orchestrate retry` reopened), follows
its events and the counts of its tally (`run.tally`), and closes on `RunFinished` (or at
`on_run_end`, whichever comes first). It writes to stderr, beside the CLI's own messages.
Declared API: `RunProgress`.
"""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.markup import escape

from bashgym import hookimpl
from bashgym.events import Note, RunFinished, RunStarted
from bashgym_observers_progress.display import RunProgress

__all__ = ["RunProgress"]

_open: dict[int, RunProgress] = {}  # by id(run): the displays of the runs in progress
_lock = threading.Lock()


@hookimpl
def on_event(event: Any, run: Any) -> None:
    if isinstance(event, RunStarted):
        console = Console(stderr=True)
        if event.resumed_from is not None:
            console.print(
                f"[yellow]resuming[/] {escape(str(event.run_dir))} {_why(event)}: finished work "
                "is kept",
                highlight=False,
                soft_wrap=True,  # one line when piped or logged, as the timed lines: a path whole
            )
        with _lock:
            _open[id(run)] = RunProgress(console, run.tally).__enter__()
        return
    progress = _open.get(id(run))
    if isinstance(event, Note) and event.text.startswith("warning:"):  # loud, and at once
        console = progress.console if progress is not None else Console(stderr=True)
        console.print(
            f"[bold yellow]WARNING[/]{escape(event.text[8:])}", highlight=False, soft_wrap=True
        )
    if progress is not None:
        progress(event)
        if isinstance(event, RunFinished):
            _close(run)


def _why(event: RunStarted) -> str:
    """Why the run goes on: how its last attempt ended, or (run.json `retrying`, written by
    `orchestrate retry`, which ended nothing) that it reopened failed tasks to run again."""
    if event.resumed_from == "retrying":
        return f"(attempt {event.attempt}) to retry its failed tasks"
    return f"(attempt {event.attempt}; the last one ended {escape(str(event.resumed_from))})"


@hookimpl
def on_run_end(summary: dict[str, Any], run: Any) -> None:
    _close(run)


def _close(run: Any) -> None:
    with _lock:
        progress = _open.pop(id(run), None)
    if progress is not None:
        progress.__exit__(None, None, None)
