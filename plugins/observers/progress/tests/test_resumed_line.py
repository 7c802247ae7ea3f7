"""The line a resumed run opens with says truly why it goes on: how its last attempt ended, or
(run.json `retrying`, which `orchestrate retry` writes and which ended nothing) that failed
tasks are retried."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from bashgym_observers_progress import on_event, on_run_end

from bashgym.events import RunStarted, Tally


def first_line(capsys: pytest.CaptureFixture[str], resumed_from: str) -> str:
    run = SimpleNamespace(tally=Tally())
    on_event(RunStarted(run_dir="/jobs/j", attempt=2, resumed_from=resumed_from), run)
    on_run_end({}, run)
    return " ".join(capsys.readouterr().err.split())


def test_a_retried_run_does_not_say_it_was_interrupted(capsys: pytest.CaptureFixture[str]) -> None:
    line = first_line(capsys, "retrying")
    assert line == (
        "resuming /jobs/j (attempt 2) to retry its failed tasks: finished work is kept"
    ), line
    assert "interrupted" not in line


def test_an_interrupted_run_says_how_it_ended(capsys: pytest.CaptureFixture[str]) -> None:
    line = first_line(capsys, "interrupted")
    assert line == (
        "resuming /jobs/j (attempt 2; the last one ended interrupted): finished work is kept"
    ), line
