"""The orchestrator: a spec becomes a task DAG, run by workers in git worktrees, merged,
verified, and every trace becomes data (issue 22).

`bashgym orchestrate plan SPEC` asks the planner for a task DAG (planning.py) and writes a job
directory; `approve`, then `run` carries the job out as a run of the kernel's engine whose
source is `orchestrator` (source.py) and whose run dir is the job dir: tasks run on any
executor in their own git worktrees (attempt.py, worktrees.py), N at once by priority and
critical path (dispatch.py, schedule.py), merge into `bashgym/<job>/integration`, `verify` runs,
and each worker's Trace goes to the run's sinks. With a run backend (`--backend ray`) each
worker runs where it puts it, the rest here (remote.py). `status`, `cancel` and `resume` work from
another terminal (status.py). This module stays light: it is imported whenever the CLI lists
its commands or a run reads the settings tables.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_orchestrator.options import OrchestratorOptions, OrchestratorSettings

__all__ = ["OrchestratorOptions", "OrchestratorSettings"]


@hookimpl
def register_sources(register: Any) -> None:
    from bashgym_orchestrator.source import OrchestratorSource

    register("orchestrator", OrchestratorSource())


@hookimpl
def register_settings(register: Any) -> None:
    register("orchestrator", OrchestratorSettings)


@hookimpl
def register_commands(app: Any) -> None:
    from bashgym_orchestrator.commands import orchestrate

    app.add_typer(orchestrate, name="orchestrate")
