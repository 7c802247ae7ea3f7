"""The executor step of a run: every task through the run store, `concurrency` at once.

Tasks are added to the store's `tasks` namespace, so a resumed run keeps the ones that
finished and runs only the rest; each runs through `run_task` (deadline, budget
and crashes become statuses) in a fresh workspace inside the run's environment. Each row is
scrubbed before the store keeps it: the store is a file in the run dir. The run's budget_usd
holds across its tasks (each gets a share of what is left; none starts once it is spent) and
across its attempts (what earlier attempts charged counts).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import bashgym_procs as procs

from bashgym.contracts import Budget, InputError, RunContext, TaskContext
from bashgym.events import RowsGenerated
from bashgym.records import Task, trace_to_row
from bashgym_work_tasks.running import finished, run_task, work_through
from bashgym_work_tasks.settings import TasksSettings, WorkspaceSettings
from bashgym_work_tasks.tasks import tasks_from_rows
from bashgym_work_tasks.workspaces import changed_files, prepare_workspace

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun
    from bashgym.store import Item

NAMESPACE = "tasks"


BUDGET_SPENT = "budget: the run's budget_usd was spent before it started"


@dataclass
class AgentRuns:
    resolved: ResolvedRun
    run: RunContext
    _noted: set[str] = field(default_factory=set)
    _in_flight: list[Budget] = field(default_factory=list)  # the budgets of tasks running

    @cached_property
    def limits(self) -> TasksSettings:
        """The run's `[tasks]` table: concurrency, each task's timeout, the budget of all."""
        return self.run.settings.table(TasksSettings)

    @cached_property
    def workspace_settings(self) -> WorkspaceSettings:
        """The run's `[workspace]` table: where each task starts, which workspaces stay."""
        return self.run.settings.table(WorkspaceSettings)

    def run_all(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One trace row per task (those finished by an earlier attempt included). A task that
        ran and did not succeed keeps its row (status, reason: SFT sinks drop it with that
        cause); one whose run raised, or that never started because the budget was spent, has
        no row and is counted as dropped by the executor, with its reason."""
        # ~0.5 s (measured): pandas only when tasks run; this plugin loads with every command
        import pandas as pd

        spec, run = self.resolved.spec, self.run
        if (warning := unsandboxed(self.resolved, run)) is not None:
            run.note(warning)  # every run: the progress display prints it at once
        tasks = tasks_from_rows(rows if spec.num_records is None else rows.head(spec.num_records))
        store = run.store
        store.add(NAMESPACE, [(t.id, t.model_dump(mode="json")) for t in tasks])
        step = self.resolved.executor
        assert step is not None, "the stage runs only for a run with an executor"
        counts = store.counts(NAMESPACE)
        if counts.get("pending", 0) + counts.get("running", 0):  # a task is left to run
            step.obj.preflight(step.options, run)  # one line, no task started, when none could
        # what earlier attempts of this run charged counts against its cap too
        budget = Budget(self.limits.budget_usd, spent_usd=run.tally.task_cost_usd)
        run.emit(
            RowsGenerated(
                step="executor", n=store.counts(NAMESPACE).get("done", 0), total=len(tasks)
            )
        )

        async def main() -> None:
            # before the first task, not in each one
            await check_workspace(self.workspace_settings)
            gate = asyncio.Condition()

            async def one(item: Item) -> None:
                task = Task.model_validate(item.payload)
                if (allowance := await self.allot(budget, task, gate)) is None:
                    store.fail(NAMESPACE, item.key, BUDGET_SPENT)  # never started
                    return
                try:
                    await self.run_one(task, allowance)
                finally:
                    async with gate:
                        self._in_flight = [b for b in self._in_flight if b is not allowance]
                        gate.notify_all()

            await work_through(store, NAMESPACE, one, concurrency=self.limits.concurrency)

        asyncio.run(main())
        for item in store.items(NAMESPACE, "failed"):
            run.drop(item.error or "failed", by=f"executor {step.name}", row_id=item.key)
        done = [item.result for item in store.items(NAMESPACE, "done")]
        run.count("tasks", len(done))
        return pd.DataFrame(done)  # failed tasks too: their status and reason go with them

    def free_usd(self, budget: Budget) -> float | None:
        """What is left of the run's budget less what the tasks in flight may still spend."""
        left = budget.left_usd
        held = (max((b.cap_usd or 0.0) - b.spent_usd, 0.0) for b in self._in_flight)
        return None if left is None else max(left - sum(held), 0.0)

    async def allot(self, budget: Budget, task: Task, gate: asyncio.Condition) -> Budget | None:
        """The task's budget: its own cap within a share of what is free of the run's (split
        among the free lanes), held from the other tasks until it ends.

        Why shares: `claude -p` reports its cost only when it ends, so N tasks started at once
        with all that is left could together spend N times the cap. With shares, what the tasks
        in flight may spend together never passes the cap; each stops at its own share, give or
        take one model request (an agent checks its cap between requests). Once nothing is
        free, a task waits while tasks in flight may still leave some unspent, then gets None:
        it is not started.
        """
        async with gate:
            while _spent(self.free_usd(budget)) and self._in_flight:
                await gate.wait()
            free = self.free_usd(budget)
            if _spent(free):
                return None
            lanes = self.limits.concurrency - len(self._in_flight)
            waiting = self.run.store.counts(NAMESPACE).get("pending", 0) + 1
            share = None if free is None else free / max(1, min(lanes, waiting))
            allowance = Budget(share, parent=budget)
            self._in_flight.append(allowance)
            return allowance

    async def run_one(self, task: Task, budget: Budget) -> None:
        """Run `task`, then keep its row and mark it done in one store transaction, and only
        then say it finished: a kill between never runs a finished (paid for) task again."""
        import pandas as pd  # (see run_all)

        step, env = self.resolved.executor, self.resolved.environment
        assert step is not None and env is not None, "resolve() pairs an executor with an env"
        workspace = procs.names.child_path(self.run.run_dir / "workspaces", task.id)
        await prepare_workspace(workspace, self.workspace_settings)
        timeout = self.limits.task_timeout_s
        deadline = time.monotonic() + timeout if timeout else None
        async with env.obj.open(workspace, env.options) as session:
            for note in getattr(session, "notes", []):  # a session not built on the base
                if note not in self._noted:  # once a run, not once a task
                    self._noted.add(note)
                    self.run.note(f"environment {env.name}: {note}")
            ctx = TaskContext(run=self.run, env=session, budget=budget, deadline=deadline)
            result = await run_task(step.obj, step.name, task, step.options, ctx, announce=False)
        files = await changed_files(workspace)
        keep = self.workspace_settings.keep
        if keep == "all" or (keep == "failed" and not result.success):
            result = result.model_copy(update={"workspace": str(workspace)})
        else:
            shutil.rmtree(workspace, ignore_errors=True)
        row = {
            **trace_to_row(result.trace),
            "prompt": task.prompt,
            "status": result.status,
            "reason": result.reason,
            "workspace": result.workspace,
            "workspace_files": files,
        }
        # scrubbed before the store, the hooks or any model sees it
        row = self.run.scrub_frame(pd.DataFrame([row])).to_dict(orient="records")[0]
        self.run.store.complete(NAMESPACE, task.id, row)  # the result and `done`, one commit
        self.run.emit(finished(result))
        self.run.emit(RowsGenerated(step="executor", n=1))


async def check_workspace(spec: WorkspaceSettings) -> None:
    """What would fail every task is said before the first starts (InputError: one line, exit
    2): a template that is not a folder, a repo git cannot read, a ref it does not have."""
    if spec.template is not None and not spec.template.is_dir():
        raise InputError(f"workspace.template {str(spec.template)!r} is not a folder")
    if spec.repo is None:
        if spec.ref:
            raise InputError(f"workspace.ref {spec.ref!r} needs workspace.repo")
        return
    # GIT_TERMINAL_PROMPT=0: a repo that asks for a password fails here instead of waiting
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    listed = await procs.run(["git", "ls-remote", "--", spec.repo], env=env, timeout=120)
    if not listed.ok:
        why = (listed.output.strip().splitlines() or [listed.reason])[0].removeprefix("fatal: ")
        raise InputError(f"workspace.repo {spec.repo!r} cannot be read by git: {why}")
    if not spec.ref:
        return
    refs = [line.split("\t", 1) for line in listed.output.splitlines() if "\t" in line]
    if any(name in (spec.ref, f"refs/heads/{spec.ref}", f"refs/tags/{spec.ref}")
           or sha.startswith(spec.ref) for sha, name in refs):  # fmt: skip
        return
    if re.fullmatch(r"[0-9a-fA-F]{4,40}", spec.ref):  # a commit no ref points at
        if not Path(spec.repo).expanduser().is_dir():
            return  # a remote's inner commits cannot be listed; the clone will say
        argv = ["git", "-C", spec.repo, "cat-file", "-e", f"{spec.ref}^{{commit}}"]
        if (await procs.run(argv, env=env, timeout=60)).ok:
            return
    raise InputError(f"workspace.ref {spec.ref!r} is not a branch, tag or commit of {spec.repo}")


def _spent(free_usd: float | None) -> bool:
    """Nothing left to spend (a ten-thousandth of a cent is nothing: float sums leave crumbs)."""
    return free_usd is not None and free_usd < 1e-6


def unsandboxed(resolved: ResolvedRun, run: RunContext) -> str | None:
    """The warning an agent run gets while its commands run in `local` because bubblewrap
    cannot (None when bubblewrap could have been used: `local` was chosen on purpose)."""
    env = resolved.environment
    if env is None or env.name != "local":
        return None
    registered = run.registry.items["environments"].get("bubblewrap") if run.registry else None
    why = "its plugin is not installed" if registered is None else registered.obj.available()
    if why is None:
        return None
    root = ", and you are root: the whole machine" if os.geteuid() == 0 else ""
    return (
        f"warning: commands of this run are NOT sandboxed: bubblewrap is not usable here ({why}),"
        " so they run in `local`, which limits time and resources and confines the file tools,"
        f" but lets a command read and write anything your user can{root}. Fix: install it"
        " (`sudo apt-get install bubblewrap` on Debian/Ubuntu, `sudo dnf install bubblewrap` on"
        " Fedora) and run again."
    )
