"""The executor step of a run: every task through the run store, `concurrency` at once.

A run with a router asks it per task which executor runs it (`routing.py`: the decision, the
task's check, escalation and run.json's `routing` section); a task's escalated attempt is an
item of its own in the store, so each attempt runs exactly once across resumes.

Tasks are added to the store's `tasks` namespace, so a resumed run keeps the ones that
finished and runs only the rest; each runs through `run_task` (deadline, budget
and crashes become statuses) in a fresh workspace inside the run's environment — here, or on
a node of the run's backend (`attempt.py`), the store and the rows staying on this process.
Each row is scrubbed before the store keeps it: the store is a file in the run dir. The run's
budget_usd holds across its tasks (each gets a share of what is left; none starts once it is
spent) and across its attempts (what earlier attempts charged counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import bashgym_procs as procs

from bashgym.contracts import Budget, BudgetExceeded, InputError, Route, RunContext
from bashgym.events import Reported, RowsGenerated
from bashgym.records import Task, trace_to_row
from bashgym_work_tasks.attempt import Job
from bashgym_work_tasks.attempt import attempt as run_attempt
from bashgym_work_tasks.routing import (
    ESCALATED,
    Attempt,
    TaskRouted,
    check_of,
    escalation,
    route_columns,
    routing_report,
)
from bashgym_work_tasks.running import finished, work_through
from bashgym_work_tasks.settings import TasksSettings, WorkspaceSettings
from bashgym_work_tasks.tasks import tasks_from_rows

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun, Step
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
        self.escalate_left_over()  # a run killed between an attempt and its escalation
        counts = store.counts(NAMESPACE)
        if counts.get("pending", 0) + counts.get("running", 0):  # a task is left to run
            for pick in self.picks.values():  # one line, no task started, when none could run
                pick.obj.preflight(pick.options, run)
        # what earlier attempts of this run charged counts against its cap too
        budget = Budget(self.limits.budget_usd, spent_usd=run.tally.task_cost_usd)
        run.emit(
            RowsGenerated(
                step="executor", n=store.counts(NAMESPACE).get("done", 0), total=self.total
            )
        )

        async def main() -> None:
            # before the first task, not in each one
            await check_workspace(self.workspace_settings)
            gate = asyncio.Condition()

            async def one(item: Item) -> None:
                task, route, attempt = await self.decide(item)
                if (allowance := await self.allot(budget, task, gate)) is None:
                    store.fail(NAMESPACE, item.key, BUDGET_SPENT)  # never started
                    return
                try:
                    await self.run_one(task, allowance, route=route, attempt=attempt)
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
        if (router := self.resolved.router) is not None:
            # the teacher: the router's `teacher` option, else where its routes escalate
            teacher = getattr(router.options, "teacher", None) or next(
                (r["escalate_to"] for r in done if r.get("escalate_to")), None
            )
            report = routing_report(done, router.name, teacher)
            run.emit(Reported(section="routing", data=report))
        return pd.DataFrame(done)  # failed tasks too: their status and reason go with them

    @cached_property
    def picks(self) -> dict[str, Step]:
        """The executors this run may use, by name: the run's, and each its router names (with
        their default options; the run's own `executor` keeps its options)."""
        own = self.resolved.executor
        assert own is not None, "resolve() gives a routed run an executor"
        out = {own.name: own}
        router = self.resolved.router
        for name in router.obj.executors(router.options) if router else []:
            if name not in out:
                registered = self.run.registry.get("executors", name)  # type: ignore[union-attr]
                out[name] = replace(own, registered=registered, options=registered.obj.Options())
        return out

    @property
    def total(self) -> int:
        return sum(self.run.store.counts(NAMESPACE).values())

    async def decide(self, item: Item) -> tuple[Task, Route | None, Attempt]:
        """The task of `item` and who runs it: the router's choice for a first attempt (asked
        in a thread: a router may block on a probe), the escalation's for an escalated one."""
        router = self.resolved.router
        if "route" in item.payload:  # an escalated attempt (see `escalate`)
            task, route = Task.model_validate(item.payload["task"]), Route(**item.payload["route"])
            attempt: Attempt = "escalated"
        else:
            task, attempt = Task.model_validate(item.payload), "first"
            if router is None:
                return task, None, attempt
            route = await asyncio.to_thread(router.obj.route, task, router.options, self.run)
            if not isinstance(route, Route):
                raise TypeError(
                    f"router {router.name!r} returned {type(route).__name__}, not a Route"
                )
        if (
            route.executor not in self.picks
            or (route.escalate_to or route.executor) not in self.picks
        ):
            raise ValueError(
                f"router {router.name!r} chose executor {route.executor!r} / escalation "  # type: ignore[union-attr]
                f"{route.escalate_to!r}; this run's executors: {', '.join(self.picks)}"
            )
        self.run.emit(
            TaskRouted(task_id=task.id, executor=route.executor, reason=route.reason,
                       score=route.score, escalate_to=route.escalate_to, attempt=attempt)
        )  # fmt: skip
        return task, route, attempt

    def escalate(self, task: Task, row: dict[str, object], route: Route | None) -> None:
        """Add `task`'s escalated attempt when its first attempt failed verification and its
        route escalates (a key already there is left as it is: exactly once)."""
        if route is None or route.escalate_to is None or row.get("verified") is not False:
            return
        if task.id.endswith(ESCALATED) or row.get("attempt") == "escalated":
            return
        if self.run.store.add(NAMESPACE, [escalation(task, row, route)]):
            self.run.emit(RowsGenerated(step="executor", n=0, total=self.total))

    def escalate_left_over(self) -> None:
        """Escalations a killed attempt of this run decided but did not add (resume)."""
        for item in self.run.store.items(NAMESPACE, "done"):
            row = item.result or {}
            if row.get("escalate_to") and row.get("attempt") == "first":
                route = Route(
                    row["executor"],
                    row.get("route_reason") or "",
                    row.get("route_score"),
                    row["escalate_to"],
                )
                self.escalate(Task.model_validate(item.payload), row, route)

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

    async def run_one(
        self, task: Task, budget: Budget, *, route: Route | None = None, attempt: Attempt = "first"
    ) -> None:
        """Run `task` (on `route`'s executor, else the run's) and its check — here, or through
        the run's backend on a node of its own — then keep its row and mark it done in one store
        transaction, and only then say it finished: a kill between never runs a finished (paid
        for) task again, and a task a backend ran twice is kept once."""
        import pandas as pd  # (see run_all)

        step = self.picks[route.executor] if route else self.resolved.executor
        env = self.resolved.environment
        assert step is not None and env is not None, "resolve() pairs an executor with an env"
        job = Job(
            task, step.name, step.options, env.name, env.options, self.workspace_settings,
            timeout_s=self.limits.task_timeout_s, check_timeout_s=self.limits.check_timeout_s,
            budget_usd=budget.left_usd,
        )  # fmt: skip
        if (backend := self.resolved.backend) is None:
            done = await run_attempt(self.run, job, budget)
        else:  # the worker charged its own copy of the budget; the run's learns it here
            done = await backend.obj.call(run_attempt, job, run=self.run, options=backend.options)
            with contextlib.suppress(BudgetExceeded):  # the worker already stopped at its cap
                budget.charge(done.spent_usd)
        for note in done.notes:
            if note not in self._noted:  # once a run, not once a task
                self._noted.add(note)
                self.run.note(f"environment {env.name}: {note}")
        result, verdict = done.result, done.verdict
        row = {
            **trace_to_row(result.trace),
            "task_id": task.id.removesuffix(ESCALATED) if attempt == "escalated" else task.id,
            "prompt": task.prompt,
            "status": result.status,
            "reason": result.reason,
            "executor": step.name,
            "final_text": result.final_text,
            "verified": verdict.verified,
            "check": check_of(task),  # the command; `reason` says only how it failed
            "check_exit": verdict.check_exit,
            "check_output": verdict.check_output or None,
            **route_columns(route, attempt),
            "workspace": result.workspace,
            "workspace_files": done.files,
        }
        # scrubbed before the store, the hooks or any model sees it
        row = self.run.scrub_frame(pd.DataFrame([row])).to_dict(orient="records")[0]
        self.run.store.complete(NAMESPACE, task.id, row)  # the result and `done`, one commit
        self.run.emit(finished(result))
        self.run.emit(RowsGenerated(step="executor", n=1))
        self.escalate(task, row, route)


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
