"""One attempt of one task, wherever it runs: its workspace made, the executor run inside the
environment, its check, what it changed.

This is the part of a task that needs the workspace, so it is what a run's backend sends to a
node (`Backend.call(attempt, job)`: the job is plain data, the context a RunContext rebuilt
there); without a backend the stage awaits it here. Either way the driver keeps the result:
it builds the row, scrubs it and completes the store item (`stage.py`), so a task a worker ran
twice (a retried worker) is still recorded once. The attempt starts by emptying its workspace,
so it is safe to start again.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import bashgym_procs as procs

from bashgym.contracts import Budget, EnvironmentSession, RunContext, TaskContext
from bashgym.records import Task, WorkerResult
from bashgym_work_tasks.routing import TaskChecked, Verdict, check_of
from bashgym_work_tasks.running import run_task
from bashgym_work_tasks.workspaces import changed_files, prepare_workspace

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bashgym_work_tasks.settings import WorkspaceSettings


@dataclass(frozen=True)
class Job:
    """What one attempt needs, by name and value (the steps are looked up where it runs)."""

    task: Task
    executor: str
    executor_options: BaseModel
    environment: str
    environment_options: BaseModel
    workspace: WorkspaceSettings
    timeout_s: float | None = None
    check_timeout_s: float | None = None
    budget_usd: float | None = None  # the task's share of the run's budget (None: no cap)


@dataclass
class Attempted:
    """How the attempt went: the executor's result (a failed check already made it `failed`),
    the check's verdict, the files it changed, its environment's notes, what it spent."""

    result: WorkerResult
    verdict: Verdict
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    spent_usd: float = 0.0


@asynccontextmanager
async def in_environment(
    run: RunContext, environment: str, options: BaseModel, where: Path, budget: Budget,
    timeout_s: float | None,
) -> AsyncIterator[TaskContext]:  # fmt: skip
    """A task's context in an open session of `environment` at `where`, its deadline from
    `timeout_s`: what a worker needs, here or on a backend's node (`attempt`, and the
    orchestrator's workers in their worktrees)."""
    assert run.registry is not None, "a run's context carries its registry"
    env = run.registry.get("environments", environment).obj
    deadline = time.monotonic() + timeout_s if timeout_s else None
    async with env.open(where, options) as session:
        yield TaskContext(run=run, env=session, budget=budget, deadline=deadline)


async def attempt(run: RunContext, job: Job, budget: Budget | None = None) -> Attempted:
    """Run `job` in `run` (a backend's rebuilt context, or the run itself with the task's live
    `budget`). Never raises for the task's own failure: that is the result's status."""
    assert run.registry is not None, "a run's context carries its registry"
    task = job.task
    executor = run.registry.get("executors", job.executor).obj
    workspace = procs.names.child_path(run.run_dir / "workspaces", task.id)
    await prepare_workspace(workspace, job.workspace)
    budget = budget if budget is not None else Budget(job.budget_usd)
    opened = in_environment(
        run, job.environment, job.environment_options, workspace, budget, job.timeout_s
    )
    async with opened as ctx:
        notes = list(getattr(ctx.env, "notes", []))  # a session not built on the base: none
        result = await run_task(
            executor, job.executor, task, job.executor_options, ctx, announce=False
        )
        verdict = await check(run, task, result, ctx.env, job.check_timeout_s)
    if verdict.verified is False and result.success:  # the agent's claim did not hold
        kind = check_failure(verdict)
        why = f"{kind}: {check_of(task)}"  # the trace says which command; the row has `check`
        outcome = {"success": False, "error_kind": "check_failed", "error_message": why}
        trace = result.trace.model_copy(
            update={"outcome": result.trace.outcome.model_copy(update=outcome)}
        )
        result = result.model_copy(update={"status": "failed", "reason": kind, "trace": trace})
    files = await changed_files(workspace)
    keep = job.workspace.keep
    if keep == "all" or (keep == "failed" and not result.success):
        result = result.model_copy(update={"workspace": str(workspace)})
    else:
        shutil.rmtree(workspace, ignore_errors=True)
    return Attempted(result, verdict, files, notes, budget.spent_usd)


def check_failure(verdict: Verdict) -> str:
    """A failed check's reason: the kind of failure, the same words for every task that failed
    alike (`check failed (exit 1)`), so a sink's drops add up by it in run.json and the
    report; each task's own command and output are its row's `check` and `check_output`."""
    if verdict.check_exit is None:
        return "check failed (stopped before it exited)"
    return f"check failed (exit {verdict.check_exit})"


async def check(
    run: RunContext, task: Task, result: WorkerResult, session: EnvironmentSession,
    timeout_s: float | None,
) -> Verdict:  # fmt: skip
    """Verify `result`: False when its executor failed; else its task's check, run in its
    workspace through its environment (exit 0: True); None when the task has no check."""
    command = check_of(task)
    if not result.success:
        return Verdict(False)
    if command is None:
        return Verdict(None)
    done = await session.run(command, timeout=timeout_s)
    passed = done.exit_code == 0
    run.emit(TaskChecked(task_id=task.id, passed=passed, exit_code=done.exit_code))
    return Verdict(passed, done.exit_code, done.output[-4000:] if not passed else "")
