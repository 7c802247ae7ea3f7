"""A stopped agent run's unfinished tasks (run.json's `tasks.interrupted`) made no trace: the
Executor stage counts the tasks that ended, not those a stop left to resume."""

from __future__ import annotations

from bashgym_commands_report.render import _stages
from bashgym_commands_report.rundir import StepDrops


def test_interrupted_tasks_are_not_counted_as_finished():
    summary = {
        "status": "interrupted",
        "plugins": {"executor": {"name": "student"}},
        "tasks": {"success": 3, "interrupted": 2, "running": 0},
    }
    (executor,) = [
        s for s in _stages(summary, {"kept": 3}, StepDrops()) if "Executor" in s["label"]
    ]
    assert (executor["rows_in"], executor["rows_out"]) == ("3", "3"), executor
