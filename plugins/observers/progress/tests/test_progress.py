"""The progress display: plain lines off a terminal; opened and closed by the run's events."""

from __future__ import annotations

import io
import time

from bashgym_observers_progress import RunProgress
from rich.console import Console

from bashgym.events import RowsGenerated, StepFinished, StepStarted, Tally


def test_progress_prints_plain_lines_when_not_a_terminal():
    buffer = io.StringIO()
    tally = Tally()
    progress = RunProgress(Console(file=buffer, width=120), tally, interval=0.05)
    with progress:
        for event in (StepStarted(step="pipeline", total=4), RowsGenerated(step="pipeline", n=3)):
            tally(event)
            progress(event)
        time.sleep(0.3)  # no event for a while: a line every interval all the same
        done = StepFinished(step="pipeline", duration_s=0.3)
        tally(done)
        progress(done)
    lines = buffer.getvalue().splitlines()
    assert lines[0].endswith("pipeline: started")
    assert any("pipeline: 3/4 done" in line for line in lines)
    assert lines[-1].endswith("pipeline: done in 0.3s (3 done)")


def test_a_run_shows_its_steps_on_stderr_and_closes_its_display(bashgym_cli, bashgym_env):
    import bashgym_observers_progress

    rows = bashgym_env.workdir / "rows.csv"
    rows.write_text("task\nfirst\nsecond\n")
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={rows}", "-k", "parquet", "--out", out
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert any(line.endswith("source: started") for line in lines)
    assert any("sink parquet: done in" in line and "(2 done)" in line for line in lines)
    assert not bashgym_observers_progress._open  # closed at RunFinished


def feed(progress: RunProgress, tally: Tally, *events) -> None:
    for event in events:
        tally(event)
        progress(event)


def test_plain_lines_show_the_columns_under_way_on_the_steps_timed_line():
    buffer = io.StringIO()
    tally = Tally()
    progress = RunProgress(Console(file=buffer, width=120), tally, interval=0.05)
    with progress:
        feed(progress, tally, StepStarted(step="pipeline", total=12),
             RowsGenerated(step="pipeline column answer", n=7, total=12),
             RowsGenerated(step="pipeline column quality", n=12, total=12))  # fmt: skip
        time.sleep(0.3)
        feed(progress, tally, StepFinished(step="pipeline", duration_s=0.3))
    lines = buffer.getvalue().splitlines()
    ticks = [line for line in lines if "pipeline: 0/12 done" in line]
    assert ticks and all("column answer 7/12" in line for line in ticks)
    assert not any("column quality" in line for line in lines)  # finished: not under way
    assert len(lines) < 20  # timed lines, not one per event


def test_a_terminal_shows_each_column_as_a_bar_under_its_step():
    buffer = io.StringIO()
    tally = Tally()
    console = Console(file=buffer, width=100, force_terminal=True, color_system=None)
    progress = RunProgress(console, tally)
    with progress:
        feed(progress, tally, StepStarted(step="pipeline", total=12),
             RowsGenerated(step="pipeline column answer", n=5, total=12))  # fmt: skip
        progress._bar.refresh()
        shown = buffer.getvalue()
        assert "  column answer" in shown and "5/12" in shown
        feed(progress, tally, RowsGenerated(step="pipeline", n=12),
             StepFinished(step="pipeline", duration_s=1.0))  # fmt: skip
        assert len(progress._bar.tasks) == 1  # the column bars go with their step


def test_the_task_line_says_interrupted_tasks_and_not_failed_ones():
    """A stopped run's unfinished tasks are `interrupted` in the tally (resumable), neither
    failed nor still running."""
    from bashgym.events import RunFinished, TaskFinished, TaskStarted

    tally = Tally()
    progress = RunProgress(Console(file=io.StringIO(), width=120), tally, interval=60)
    for event in (
        TaskStarted(task_id="a", executor="x"),
        TaskFinished(task_id="a", status="success"),
        TaskStarted(task_id="b", executor="x"),
        TaskFinished(task_id="b", status="failed"),
        TaskStarted(task_id="c", executor="x"),
    ):
        tally(event)
    assert progress._extra() == "1 ok, 1 failed, 1 running"
    tally(RunFinished(status="interrupted"))
    assert progress._extra() == "1 ok, 1 failed, 1 interrupted"


def test_the_cost_says_unknown_when_a_model_had_no_price():
    """run.json's cost is null then; the line said `$0.5000` as if it were the whole cost."""
    from bashgym.events import UsageCharged
    from bashgym.records import Usage

    tally = Tally()
    progress = RunProgress(Console(file=io.StringIO(), width=120), tally, interval=60)
    tally(UsageCharged.of(Usage(input_tokens=10), 0.5, model="gpt", alias="a"))
    assert progress._extra().endswith("$0.5000")
    tally(UsageCharged.of(Usage(input_tokens=10), None, model="local", alias="b"))
    assert progress._extra().endswith("$0.5000 + cost unknown")
