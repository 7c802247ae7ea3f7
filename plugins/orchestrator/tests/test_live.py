"""The live table a person watches: each task's row from the events, and a caption saying what
the job spent and how many rows the sinks hold already (they are written as the job goes)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from bashgym_orchestrator.events import MergeResult
from rich.console import Console

from bashgym.events import SinkWrote, Tally, TaskStarted, UsageCharged


def test_the_table_follows_the_events_and_says_what_the_sinks_hold() -> None:
    from bashgym_orchestrator.live import JobDisplay

    tally = Tally()
    run = SimpleNamespace(tally=tally)
    display = JobDisplay(Console(file=io.StringIO(), force_terminal=False))
    events = [
        TaskStarted(task_id="a", executor="shell"),
        UsageCharged(model="m", task_id="a", input_tokens=10, cost_usd=0.25),
        MergeResult(task_id="a", branch="bashgym/j/a", outcome="merged"),
        SinkWrote(sink="nemo-jsonl", rows=2, paths=[]),
    ]
    for event in events:
        tally(event)
        display.on_event(event, run)
    table = display._table()
    assert display.rows["a"]["state"] == "merged" and display.rows["a"]["attempt"] == 1
    assert table.caption == "spent $0.2500 · 2 rows in the sinks"
