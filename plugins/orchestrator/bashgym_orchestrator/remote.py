"""A task's worker through the run's backend (`orchestrate run --backend ray`).

Only the worker moves: the executor's run of the task in its worktree, inside the task's
environment. It is one module-level function of plain data (`work`), which the backend calls on
a node (`Backend.call`: the context a RunContext rebuilt there, its events emitted here). The
worktree, setup, commit, check, merge and the run store stay on the driver, so the worktree's
path must mean the same folder on every node: a shared filesystem is assumed, as for `-x` runs
on a backend.

The backend a run was resolved with is read back from the run's own `run.toml` (the engine
writes it, fully resolved, before the source opens): a source is not handed the resolved run,
and this way `orchestrate resume` and `retry`, which rerun that file, keep the backend too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bashgym_work_tasks import in_environment, run_task

from bashgym.contracts import Budget, InputError, RunContext
from bashgym.records import Task, WorkerResult
from bashgym.runspec import Step
from bashgym.text import one_line

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bashgym.registry import Registry


@dataclass(frozen=True)
class Work:
    """What one worker needs, by name and value (the executor and environment are looked up
    where it runs; options are pydantic models, which pickle)."""

    task: Task
    executor: str
    executor_options: BaseModel
    environment: str
    environment_options: BaseModel
    worktree: str  # absolute; the same path on every node (a shared filesystem)
    timeout_s: float | None = None
    budget_usd: float | None = None  # what is left of the task's budget (None: no cap)


@dataclass(frozen=True)
class Worked:
    """The worker's result and what it spent (the driver charges the task's live budget)."""

    result: WorkerResult
    spent_usd: float


async def work(run: RunContext, job: Work) -> Worked:
    """Run `job`'s executor in its worktree inside its environment, in `run` (a backend's
    rebuilt context). Never raises for the task's own failure: that is the result's status.
    A worker lost mid-call is run again by the backend on the worktree as it was left; the
    driver's commit and check judge what the tree holds then."""
    assert run.registry is not None, "a run's context carries its registry"
    executor = run.registry.get("executors", job.executor).obj
    budget = Budget(job.budget_usd)
    where = Path(job.worktree)
    opened = in_environment(
        run, job.environment, job.environment_options, where, budget, job.timeout_s
    )
    async with opened as ctx:
        result = await run_task(
            executor, job.executor, job.task, job.executor_options, ctx, announce=False
        )
    return Worked(result, budget.spent_usd)


def backend_of(run_dir: Path, registry: Registry) -> Step | None:
    """The backend `run_dir`'s run was resolved with (its `run.toml`, read as `bashgym run` and
    `orchestrate resume` read it), or None: it has none. The Step's object is the registry's,
    the one the engine opened for this run."""
    from bashgym_cli.runs import load_run_file

    path = run_dir / "run.toml"
    if not path.is_file():
        return None
    try:
        backend = load_run_file(path).backend
    except (OSError, ValueError) as exc:  # RunConfigError is a ValueError
        raise InputError(f"{path}: cannot read the run's config ({exc})") from None
    if backend is None:
        return None
    if backend.plugin not in registry.items["backends"]:
        known = ", ".join(registry.names("backends")) or "none installed"
        raise InputError(f"backend {backend.plugin!r} is not installed (backends: {known})")
    registered = registry.get("backends", backend.plugin)
    try:
        options = registered.obj.Options.model_validate(backend.options)
    except ValueError as exc:
        raise InputError(f"{path}: backend {backend.plugin!r}: {one_line(exc)}") from None
    return Step("backend", registered, options)


__all__ = ["Work", "Worked", "backend_of", "work"]
