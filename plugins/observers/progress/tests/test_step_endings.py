"""How a step's end reads (tester's findings): a step stopped by Ctrl-C or SIGTERM is
`interrupted after`, not `failed in`; a step that reports no count (scrub) says no `0 done`
nor `0/0`. The display is fed the run's real events, through a real Tally, as a run does."""

from __future__ import annotations

import io

from bashgym_observers_progress import RunProgress
from rich.console import Console

from bashgym.events import Event, Note, RowsGenerated, RunFinished, StepFinished, StepStarted, Tally


def plain_lines(*events: Event) -> list[str]:
    """The lines a piped display prints for `events` (the ticker's interval out of the way)."""
    buffer, tally = io.StringIO(), Tally()
    progress = RunProgress(Console(file=buffer, width=120), tally, interval=60)
    with progress:
        for event in events:
            tally(event)
            progress(event)
    return [line.split("] ", 1)[1] for line in buffer.getvalue().splitlines()]


def stopped(status: str) -> list[Event]:
    """A pipeline step ended by an exception, then the run's end with `status` (the engine
    emits the step's end in its `finally`, before it knows why the run stops)."""
    return [
        StepStarted(step="pipeline", total=6000), RowsGenerated(step="pipeline", n=5500),
        StepFinished(step="pipeline", duration_s=8.94, ok=False),
        Note(text="the model server closed"),  # what may come in between: not a step's end
        RunFinished(status=status, error="Ctrl-C" if status == "interrupted" else "boom"),
    ]  # fmt: skip


def test_a_step_stopped_by_an_interruption_reads_interrupted_not_failed():
    lines = plain_lines(*stopped("interrupted"))
    assert lines == ["pipeline: started", "pipeline: interrupted after 8.9s (5500 done)"], lines


def test_a_step_that_failed_still_reads_failed():
    lines = plain_lines(*stopped("failed"))
    assert lines == ["pipeline: started", "pipeline: failed in 8.9s (5500 done)"], lines


def test_a_failed_step_the_run_went_on_from_is_said_before_the_next_step():
    lines = plain_lines(
        StepStarted(step="sink a"), StepFinished(step="sink a", duration_s=0.1, ok=False),
        StepStarted(step="sink b"), RowsGenerated(step="sink b", n=2),
        StepFinished(step="sink b", duration_s=0.1), RunFinished(status="ok"),
    )  # fmt: skip
    assert lines == [
        "sink a: started", "sink a: failed in 0.1s", "sink b: started",
        "sink b: done in 0.1s (2 done)",
    ], lines  # fmt: skip


def test_a_display_closed_before_the_run_ended_says_a_pending_failure():
    assert plain_lines(
        StepStarted(step="scrub"), StepFinished(step="scrub", duration_s=0.0, ok=False)
    )[-1] == ("scrub: failed in 0.0s")


def test_a_step_that_reports_no_count_says_none_piped():
    lines = plain_lines(
        StepStarted(step="scrub"), StepFinished(step="scrub", duration_s=0.01),
        StepStarted(step="sink parquet", total=0), RowsGenerated(step="sink parquet", n=0),
        StepFinished(step="sink parquet", duration_s=0.01),
    )  # fmt: skip
    assert lines == [
        "scrub: started", "scrub: done in 0.0s", "sink parquet: started",
        "sink parquet: done in 0.0s (0 done)",  # a sink that wrote none: a true 0
    ], lines  # fmt: skip


def terminal_bars(*events: Event) -> str:
    buffer, tally = io.StringIO(), Tally()
    console = Console(file=buffer, width=100, force_terminal=True, color_system=None)
    progress = RunProgress(console, tally)
    with progress:
        for event in events:
            tally(event)
            progress(event)
    return buffer.getvalue().rsplit("\r", 1)[-1]  # the last frame, as the terminal keeps it


def test_a_step_that_reports_no_count_shows_no_count_on_a_terminal():
    shown = terminal_bars(
        StepStarted(step="pipeline", total=3), RowsGenerated(step="pipeline", n=3),
        StepFinished(step="pipeline", duration_s=0.5),
        StepStarted(step="scrub"), StepFinished(step="scrub", duration_s=0.01),
    )  # fmt: skip
    scrub = next(line for line in shown.splitlines() if "scrub" in line)
    assert "0/0" not in scrub and "/" not in scrub.replace("scrub", ""), shown
    assert any("pipeline" in line and "3/3" in line for line in shown.splitlines()), shown


def test_an_interrupted_step_says_so_on_a_terminal():
    shown = terminal_bars(*stopped("interrupted"))
    line = next(line for line in shown.splitlines() if "pipeline" in line)
    assert "pipeline (interrupted)" in line and "5500/5500" in line, shown
