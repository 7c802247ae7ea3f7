"""One attempt at one task: a fresh worktree, its setup, the worker, a commit, the check.

The worktree starts from the integration branch's tip, so a task sees the merged work of every
task it depends on (they merged before it could start). The spec's `copy` files are copied in,
`setup` runs, and the worker gets its own port range (`BASHGYM_PORT_BASE`, `BASHGYM_PORTS`) in
its environment, so two dev servers never collide. The executor is called through
`bashgym_work_tasks.run_task` (deadline, budget and crashes become statuses). Once the worker's
processes are gone (its environment session closed), what it left uncommitted is committed on
its branch through the safe git wrapper, and the task's `check` runs in a new session: an
attempt succeeds when the executor succeeded, the branch changed and the check passed (a worker
that "finishes" having changed nothing failed, whatever it said).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from bashgym_procs import git
from bashgym_work_tasks import run_task

from bashgym.contracts import Budget, BudgetExceeded, RunContext, TaskContext
from bashgym.records import Completed, Task, WorkerResult, trace_to_row
from bashgym.text import one_line
from bashgym_orchestrator.events import WorkerOutput
from bashgym_orchestrator.job import Job
from bashgym_orchestrator.options import OrchestratorOptions
from bashgym_orchestrator.plan import PlannedTask
from bashgym_orchestrator.remote import Work, Worked
from bashgym_orchestrator.remote import work as remote_work
from bashgym_orchestrator.spec import Spec
from bashgym_orchestrator.worktrees import (
    GitError,
    Repository,
    Uncommittable,
    Worktree,
    copy_files,
    in_words,
    task_branch,
)

SETUP_TIMEOUT_S = 1800.0
CHECK_TIMEOUT_S = 1800.0
TAIL = 2000  # characters of output carried into a retry's prompt


@dataclass(frozen=True)
class Chosen:
    """The executor a task runs on, and why (a router's reason, or `configured`)."""

    name: str
    obj: Any
    options: Any
    why: str = "configured"


@dataclass
class Workbench:
    """What every attempt of a job shares."""

    run: RunContext
    job: Job
    spec: Spec
    repo: Repository
    options: OrchestratorOptions
    environment: Any  # the registered Environment object
    environment_name: str
    environment_options: Any
    backend: Any = None  # the run's backend Step (`remote.backend_of`): workers run through it


@dataclass
class Attempt:
    """How an attempt ended; `row` is its worker's trace as a dataset row (scrubbed)."""

    task_id: str
    number: int
    branch: str
    start: str
    status: str
    reason: str | None
    executor: str
    route: str = "configured"  # why this executor (a router's reason)
    check: dict[str, Any] | None = None
    files: list[str] = field(default_factory=list)
    insertions: int = 0
    deletions: int = 0
    commit: str | None = None
    cost_usd: float | None = None
    tail: str = ""
    row: dict[str, Any] = field(default_factory=dict)
    fatal: bool = False  # the orchestrator's git failed after the worker ran: no retry

    @property
    def success(self) -> bool:
        return self.status == "success"

    def record(self, redact: Callable[[str], str] = str) -> dict[str, Any]:
        """What the run store keeps of it (all JSON), its free text through `redact` (the
        store is a file in the job dir: a secret a worker printed must not land there; `row`
        was scrubbed when it was made)."""
        out = dict(self.__dict__)
        out["tail"] = redact(self.tail)
        out["reason"] = self.reason and redact(self.reason)
        if self.check is not None:
            out["check"] = {**self.check, "output": redact(self.check.get("output", ""))}
        return out


def planned_metadata(task: PlannedTask) -> dict[str, Any]:
    """What the plan knows of a task before it runs, as a Task's metadata: the features a
    router weighs (bashgym-routers-confidence reads `estimated_turns` and `files`) and what
    `bashgym router fit` later reads back from the run's tasks."""
    return {
        "estimated_turns": task.estimated_turns,
        "files": list(task.files),
        "priority": task.priority,
        "budget_usd": task.budget_usd,
    }


def ports(options: OrchestratorOptions, slot: int) -> dict[str, str]:
    """The worker slot's own port range, as environment variables."""
    first = options.port_base + slot * options.ports_per_worker
    last = first + options.ports_per_worker - 1
    return {"BASHGYM_PORT_BASE": str(first), "BASHGYM_PORTS": f"{first}-{last}"}


def env_options(bench: Workbench, slot: int) -> Any:
    """The environment's options with the slot's ports added (where the environment takes
    variables: bashgym-sandbox's `env`)."""
    options = bench.environment_options
    if "env" in type(options).model_fields:
        return options.model_copy(update={"env": {**options.env, **ports(bench.options, slot)}})
    return options


def task_prompt(task: PlannedTask, spec: Spec, earlier: list[dict[str, Any]]) -> str:
    """The worker's instruction: the plan's prompt, the job's constraints and acceptance
    criteria (the whole job's, so a task's work fits them), the task's check, and for a retry
    what went wrong before."""
    lines = [f"Task {task.id}: {task.title}", "", task.prompt.strip(), ""]
    lines.append(f"This task is part of the job {spec.title!r}.")
    for heading, items in (
        ("Constraints", spec.constraints),
        ("Acceptance criteria of the whole job", spec.acceptance),
    ):
        if items:
            lines += [f"{heading}:", *(f"- {item}" for item in items)]
    if check := task.check or spec.check:
        lines.append(f"When you finish, `{check}` must pass.")
    lines.append(  # no branch or job name here: a small model took one for a path
        "Work in the current folder, a git checkout of the repository (paths are relative to "
        "it). Change files as the task asks; what you leave uncommitted is committed for you."
    )
    if earlier:
        last = earlier[-1]
        lines += [
            "",
            f"An earlier attempt at this task failed (attempt {last['number']}). Start again "
            "from a clean checkout and avoid what went wrong.",
            f"Why it failed: {last.get('reason') or 'no reason given'}",
        ]
        if last.get("tail"):
            lines += ["The end of that attempt's output:", _fenced(last["tail"])]
        check = last.get("check")
        if check and not check.get("ok"):
            lines += [
                f"The check `{check['command']}` failed ({check['reason']}):",
                _fenced(check.get("output", "")[-TAIL:]),
            ]
    return "\n".join(lines)


def _fenced(text: str) -> str:
    return "```\n" + text.strip()[-TAIL:] + "\n```"


async def run_attempt(
    bench: Workbench,
    task: PlannedTask,
    number: int,
    chosen: Chosen,
    budget: Budget,
    slot: int,
    start: str,
    earlier: list[dict[str, Any]],
) -> Attempt:
    """Run attempt `number` of `task` from commit `start` (see the module docstring)."""
    run, spec, repo = bench.run, bench.spec, bench.repo
    branch = task_branch(bench.job.name, task.id)
    attempt = Attempt(task.id, number, branch, start, "error", None, chosen.name, chosen.why)
    tree = await repo.add_worktree(bench.job.worktrees / task.id, branch, start)
    copied = copy_files(repo.root, tree.path, spec.copy_files)
    prompt = task_prompt(task, spec, earlier)
    work = Task(
        id=task.id,
        prompt=prompt,
        depends_on=list(task.depends_on),
        metadata={
            "job": bench.job.name,
            "attempt": number,
            "branch": branch,
            **planned_metadata(task),
        },
    )
    options = env_options(bench, slot)
    timeout = bench.options.task_timeout_s
    result: WorkerResult | None = None
    if bench.backend is not None:  # setup here, the worker where the backend puts it
        ready = True
        if spec.setup:
            async with bench.environment.open(tree.path, options) as session:
                ready = await _stage(bench, session, task.id, "setup", spec.setup, attempt)
        if not ready:
            result = WorkerResult.failed(work, chosen.name, "error", attempt.reason or "setup")
        else:
            result = await remote_worker(bench, work, chosen, options, tree.path, budget, timeout)
            attempt.status, attempt.reason = result.status, result.reason
    else:
        async with bench.environment.open(tree.path, options) as session:
            if spec.setup and not await _stage(
                bench, session, task.id, "setup", spec.setup, attempt
            ):
                result = WorkerResult.failed(work, chosen.name, "error", attempt.reason or "setup")
            else:
                deadline = time.monotonic() + timeout if timeout else None
                ctx = TaskContext(run=run, env=session, budget=budget, deadline=deadline)
                result = await run_task(
                    chosen.obj, chosen.name, work, chosen.options, ctx, announce=False
                )
                attempt.status, attempt.reason = result.status, result.reason
    attempt.tail = _tail(result)
    attempt.cost_usd = result.cost_usd
    # the worker's processes are gone (session closed): git may look at what it left
    message = (
        f"{task.id}: {task.title}\n\nbashgym job {bench.job.name}, "
        f"attempt {number}, executor {chosen.name}"
    )
    try:
        await repo.commit_all(tree, message, copied)
        diff = await repo.diff(tree, start)
    except (git.UnsafeRepo, Uncommittable) as exc:  # what the task left: a failed attempt
        _not_committed(attempt, exc)
        attempt.row = trace_row(run, result, attempt, chosen, prompt)
        return attempt
    except GitError as exc:  # not the task's doing (.git not put back, a timeout, a full disk)
        attempt.status, attempt.fatal = "error", True
        attempt.reason = f"git failed after the worker ran: {in_words(exc)}"
        attempt.row = trace_row(run, result, attempt, chosen, prompt)
        return attempt
    attempt.files, attempt.insertions, attempt.deletions = (
        diff.files,
        diff.insertions,
        diff.deletions,
    )
    attempt.commit = await repo.tip(tree)
    if attempt.success and not diff.files:  # "done" with nothing done: a permission silently
        attempt.status = "failed"  # refused, a model that only talked (shared/peers.md)
        attempt.reason = "the worker said it succeeded but changed no file"
    check = task.check or spec.check
    if attempt.success and check:
        async with bench.environment.open(tree.path, options) as session:
            await _stage(bench, session, task.id, "check", check, attempt)
    attempt.row = trace_row(run, result, attempt, chosen, prompt)
    return attempt


def _not_committed(attempt: Attempt, exc: Exception) -> None:
    """The attempt failed: what the task left in its worktree could not be committed, most
    often a repository or worktree of its own inside it (a `git init`, a `git worktree add
    sub`, a cloned submodule), which git refuses to add without a commit (`Uncommittable`)
    and the safe git wrapper will not run git beside once it has one (`git.UnsafeRepo`).
    That is the task's doing, like a failed check: a failed attempt, retried as any other with
    the reason in its prompt, its worker's trace kept; not an orchestrator error that fails
    the task outright (nor "could not start the worker": it ran). Any other git failure at
    that point (the repository's .git that cannot be put back, a timeout, a full disk) is not
    the task's: the attempt is `fatal`, its trace kept, and the task fails without paying a
    worker again for it."""
    why = f"what the task left in its worktree could not be committed: {in_words(exc)}"
    if attempt.success:
        attempt.status, attempt.reason = "failed", why
    else:  # the worker failed too: its own reason first
        attempt.reason = f"{attempt.reason or attempt.status}; {why}"


async def remote_worker(
    bench: Workbench, work: Task, chosen: Chosen, env_options: Any, folder: Path,
    budget: Budget, timeout_s: float | None = None,
) -> WorkerResult:  # fmt: skip
    """The worker through the run's backend (`remote.work` on a node, same worktree path); what
    it spent is charged here to the task's live budget, as a local worker's model calls are."""
    job = Work(
        task=work,
        executor=chosen.name,
        executor_options=chosen.options,
        environment=bench.environment_name,
        environment_options=env_options,
        worktree=str(folder.absolute()),
        timeout_s=timeout_s,
        budget_usd=budget.left_usd,
    )
    step = bench.backend
    try:
        done: Worked = await step.obj.call(remote_work, job, run=bench.run, options=step.options)
    except Exception as exc:  # noqa: BLE001 -- a node lost twice, a worker that could not
        # start (any exception a backend raises): the attempt's status, retried like a failure
        why = f"the {step.name} backend did not run the worker: {one_line(exc)}"
        return WorkerResult.failed(work, chosen.name, "error", why)
    with contextlib.suppress(BudgetExceeded):  # the worker already stopped at its cap
        budget.charge(done.spent_usd)
    return done.result


async def _stage(
    bench: Workbench, session: Any, task_id: str, stage: str, command: str, attempt: Attempt
) -> bool:
    """Run setup or check in the worker's environment; a failure fails the attempt."""
    timeout = SETUP_TIMEOUT_S if stage == "setup" else CHECK_TIMEOUT_S
    done: Completed = await session.run(command, timeout=timeout)
    if done.output.strip():
        bench.run.emit(WorkerOutput(task_id=task_id, stage=stage, text=done.output[-TAIL:]))
    if stage == "check":
        attempt.check = {
            "command": command,
            "ok": done.ok,
            "exit_code": done.exit_code,
            "reason": done.reason,
            "output": done.output[-4 * TAIL :],
        }
    if not done.ok:
        attempt.status = "failed"
        attempt.reason = f"{stage} `{' '.join(command.split())[:80]}` failed ({done.reason})"
    return done.ok


def _tail(result: WorkerResult | None) -> str:
    """The end of what the worker said (its final text, else its last messages)."""
    if result is None:
        return ""
    if result.final_text.strip():
        return result.final_text[-TAIL:]
    text = "\n".join(m.content for m in result.trace.messages[-4:] if m.content)
    return text[-TAIL:]


def trace_row(
    run: RunContext, result: WorkerResult, attempt: Attempt, chosen: Chosen | None, prompt: str
) -> dict[str, Any]:
    """The attempt's trace as a dataset row, scrubbed before the store keeps it (the merge
    outcome is added when the job's traces are read: it is known only later)."""
    trace = result.trace.model_copy(deep=True)
    trace.provenance.git_branch = attempt.branch
    trace.provenance.git_commit = attempt.commit
    trace.provenance.executor = trace.provenance.executor or attempt.executor or None
    row = {
        **trace_to_row(trace),
        "prompt": prompt,
        "status": attempt.status,
        "reason": attempt.reason,
    }
    return run.scrub_frame(pd.DataFrame([row])).to_dict(orient="records")[0]  # type: ignore[no-any-return]


__all__ = [
    "Attempt",
    "Chosen",
    "Workbench",
    "Worktree",
    "planned_metadata",
    "remote_worker",
    "run_attempt",
    "task_prompt",
    "trace_row",
]
