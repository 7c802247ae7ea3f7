"""Agent runs (a default plugin): each source row a Task, run by the run's executor.

The kernel's engine hands the source rows to the `run_tasks` hook when a run names an
executor (`-x`); this plugin answers it: every row becomes a Task (`tasks.py`), each Task runs
in a fresh workspace (`workspaces.py`) inside the run's environment, `concurrency` at once
through the run store — so a killed run resumes with each task exactly once — and the result
is one trace row per task (`stage.py`). With a run `backend` (`--backend ray`) each task's
attempt (`attempt.py`: workspace, executor, check) runs where the backend puts it, while the
store, the rows and the events stay here. A third party can also answer the same hook another
way and turn this one off with BASHGYM_LOAD_PLUGINS.
Declared API: `run_task` (how any plugin calls an executor: deadline, budget and crashes become
statuses), `in_environment` (a task's context in an open environment session),
`work_through` (store items N at a time, exactly once), `tasks_from_rows`, `PROMPT_COLUMNS`.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_work_tasks.attempt import in_environment
from bashgym_work_tasks.running import run_task, work_through
from bashgym_work_tasks.settings import TasksSettings, WorkspaceSettings
from bashgym_work_tasks.stage import AgentRuns
from bashgym_work_tasks.tasks import PROMPT_COLUMNS, tasks_from_rows

__all__ = [
    "PROMPT_COLUMNS",
    "TasksSettings",
    "WorkspaceSettings",
    "in_environment",
    "run_task",
    "tasks_from_rows",
    "work_through",
]


@hookimpl
def run_tasks(rows: Any, resolved: Any, run: Any) -> Any:
    return AgentRuns(resolved, run).run_all(rows)


@hookimpl
def register_settings(register: Any) -> None:
    register("workspace", WorkspaceSettings)
    register("tasks", TasksSettings)
