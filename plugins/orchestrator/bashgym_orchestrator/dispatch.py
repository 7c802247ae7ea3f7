"""Dispatch, monitor, synthesize: a job's tasks run on N workers, merge, and are verified.

Every task is an item of the run store (`tasks`), every attempt too (`attempts`, its trace row
kept the moment it ends), so a job killed at any point resumes with each task ending exactly
once: a finished task stays finished, a task in flight runs again (its stored attempts count
toward its retries), and the integration branch is put back to the commit recorded with the
last finished merge, so a merge a kill left half done is undone before it is done again.

Ready tasks (every dependency merged) start by priority, then by the longest chain of work
still behind them (`Schedule`), on up to `workers` slots. A failed attempt is retried (up to
`retries` times) with a prompt that carries the failure, its branch kept as
`<branch>-attempt-<n>`; after the last, the task is `failed` and every task depending on it
`blocked`, with the reason. No task starts when what is spent plus what the running tasks may
still spend would pass the job's budget. Completed branches merge into the integration branch
as they complete (so in dependency order, `--no-ff`); a conflict is aborted, its files named,
its branch kept (or, with `resolve_conflicts`, handed to a worker on the integration worktree).
Then `verify` runs there, worktrees of merged tasks are removed, and job.json says the result.
Whatever the end, a worktree a task made with its own `git worktree add` in the job's
worktrees folder is unregistered from the user's repository, decided by where git's record
says it is (a worktree the user or another job has, made before or during this job, never is:
`_remove_strays`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bashgym_work_tasks import in_environment, run_task

from bashgym.contracts import Budget, InputError
from bashgym.events import TaskFinished
from bashgym.records import Task, WorkerResult
from bashgym.text import one_line
from bashgym_orchestrator.attempt import (
    Attempt,
    Workbench,
    env_options,
    remote_worker,
    run_attempt,
    trace_row,
)
from bashgym_orchestrator.events import (
    MergeResult,
    TaskBlocked,
    TaskCompleted,
    TaskFailed,
    VerifyResult,
)
from bashgym_orchestrator.gitdir import GitDirChanged, describe, needs_guard
from bashgym_orchestrator.job import write_json
from bashgym_orchestrator.plan import Plan, PlannedTask, critical_path
from bashgym_orchestrator.retry import fresh_from
from bashgym_orchestrator.schedule import Scheduler, State
from bashgym_orchestrator.status import STOPPED, attempt_counts, attempts_cost
from bashgym_orchestrator.stream import SinkStream
from bashgym_orchestrator.worktrees import (
    EXPLAINED,
    GitError,
    Uncommittable,
    Worktree,
    in_words,
    integration_branch,
    remove_entries,
)

TASKS, ATTEMPTS, META = "tasks", "attempts", "job"
MERGED_OUTCOMES = ("merged", "empty", "resolved")
BLOCKED, NOT_STARTED = "blocked: ", "not started: "  # a task's error in the store
POLL_S = 0.25  # how often the loop looks for `orchestrate cancel`
VERIFY_TIMEOUT_S = 3600.0


class Cancelled(Exception):
    """`orchestrate cancel` asked the job to stop."""


@dataclass
class Running:
    task_id: str
    slot: int
    budget: Budget


@dataclass
class JobRunner:
    bench: Workbench
    plan: Plan
    choose: Any  # (PlannedTask, attempt number, earlier attempts) -> Chosen (may block)
    retries: int
    workers: int
    cap_usd: float | None
    stream: SinkStream | None = None  # the sinks written as the job goes (`stream`)
    planning_usd: float | None = 0.0  # what planning cost, spent from the budget; None: no price
    started: float = field(default_factory=time.monotonic)
    earlier_wall_s: float = 0.0  # the wall time of the job's earlier runs (`_earlier_wall`)
    _running: dict[asyncio.Task[None], Running] = field(default_factory=dict)
    _merge_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # who may have written the user's .git (`gitdir`): what runs task code now, what ran since
    # the guard last looked, and the (who, path) pairs already noted
    _acting: set[str] = field(default_factory=set)
    _acted: set[str] = field(default_factory=set)
    _noted: set[tuple[str, str]] = field(default_factory=set)

    @property
    def store(self) -> Any:
        return self.bench.run.store

    # -- the loop -------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """The job to its end (see the module docstring). Where the environment lets a task
        write the user's `.git`, it is guarded from here on and put back at the end, whatever
        the end (`gitdir`)."""
        bench = self.bench
        git_dir = bench.repo.root / ".git"
        if needs_guard(bench.environment, bench.environment_options, git_dir):
            bench.repo.protect(self._restored)
        self._worktrees_before = bench.repo.admin_names()  # to say which were added meanwhile
        try:
            return await self._run()
        except BaseException:
            with contextlib.suppress(Exception):  # cancelled, or an error: not left either
                await self._remove_strays()
            raise
        finally:
            self._restore_at_end()

    async def _run(self) -> dict[str, Any]:
        run, repo, job = self.bench.run, self.bench.repo, self.bench.job
        store = self.store
        self.earlier_wall_s = self._earlier_wall()
        store.add(TASKS, [(t.id, t.model_dump(mode="json")) for t in self.plan.tasks])
        self.base = await self._base()
        self.integration = await repo.open_worktree(
            job.worktrees / "integration", integration_branch(job.name), self.base
        )
        self.tip = self._last_integration_commit()
        await repo.reset_to(self.integration, self.tip)
        self.schedule = Scheduler(self.plan.tasks)
        self._restore_states()
        spent = run.tally.task_cost_usd + (self.planning_usd or 0.0)
        self.budget = Budget(self.cap_usd, spent_usd=spent)
        free_slots = list(range(self.workers))
        try:
            while True:
                if job.cancel_file.exists():
                    raise Cancelled("cancelled by `bashgym orchestrate cancel`")
                while free_slots and (tid := self.schedule.peek()) is not None:
                    allowance = self._allot(self.plan.task(tid))
                    if allowance is None:
                        if self._running:
                            break  # wait: a running task may leave some budget unspent
                        self._not_started(tid, self._budget_reason())
                        continue
                    if store.claim(TASKS, tid) is None:  # the run's lock makes this never
                        raise InputError(f"task {tid!r} is held by another process")
                    slot = free_slots.pop(0)
                    self.schedule.start(tid)
                    work = asyncio.create_task(self._work(tid, slot, allowance), name=tid)
                    self._running[work] = Running(tid, slot, allowance)
                    self._snapshot("running")
                if not self._running:
                    break
                done, _ = await asyncio.wait(
                    self._running, timeout=POLL_S, return_when=asyncio.FIRST_COMPLETED
                )
                for work in done:
                    ended = self._running.pop(work)
                    free_slots.append(ended.slot)
                    free_slots.sort()
                    exc = work.exception()
                    if exc is not None and self.schedule.state(ended.task_id) is State.RUNNING:
                        self._fail(ended.task_id, _failure(exc))
                    self._snapshot("running")
        except BaseException:
            for work in self._running:
                work.cancel()
            await asyncio.gather(*self._running, return_exceptions=True)
            for held in (
                *self.store.items(TASKS, "running"),
                *self.store.items(ATTEMPTS, "running"),
            ):
                self.store.fail(held.namespace, held.key, "stopped", retry=True)  # pending again
            if self.stream is not None:  # what had ended is in the sinks when it stops
                with contextlib.suppress(Exception):
                    await self.stream.drain()
            raise
        if self.stream is not None:
            await self.stream.drain()
        verify = await self._verify()
        await self._clean_up(verify)
        await self._remove_strays()
        return self._snapshot(self._ending(), verify=verify)

    def _ending(self) -> str:
        """job.json's last word: `failed` when no task merged (every one failed, conflicted or
        was blocked: the integration branch holds nothing of the job), else `done`; a script
        reads it from the exit code too (`commands`)."""
        merged = [s for s in self.states().values() if s == "merged"]
        return "done" if merged or not self.plan.tasks else "failed"

    def _earlier_wall(self) -> float:
        """How long the job ran before this run (`resume`, `retry`): what the last job.json
        says, where the run store holds the job's earlier tasks (a first run, or one started
        over, has none). job.json's `wall_s` counts every run, as `critical_path_s` adds the
        attempts of every run, so the wall is never below the critical path for the same work
        (a `kill -9` during a merge loses the time since its last job.json, a second or so)."""
        if not self.store.items(TASKS):
            return 0.0
        wall = (self.bench.job.result() or {}).get("wall_s")
        return float(wall) if isinstance(wall, int | float) and wall > 0 else 0.0

    async def _base(self) -> str:
        """The commit every task starts from: the spec's base branch as it was at the job's
        first start (kept in the store, so a resumed job starts from the same commit)."""
        store = self.store
        store.add(META, ["base"])
        item = store.get(META, "base")
        if item is not None and item.state == "done":
            return str(item.result)
        spec, repo = self.bench.spec, self.bench.repo
        commit = await repo.commit_of(spec.base_branch or await repo.current_branch())
        if store.claim(META, "base") is not None:
            store.complete(META, "base", commit)
        return commit

    def _last_integration_commit(self) -> str:
        done = [i for i in self.store.items(TASKS, "done") if i.result]
        done.sort(key=lambda i: i.finished_at or 0)
        return str(done[-1].result["integration_commit"]) if done else self.base

    def _restore_states(self) -> None:
        """The schedule as the store has it (a resumed job): merged tasks succeeded; failed
        and conflicted ones failed (their dependents are blocked again); tasks the budget
        never started are cancelled; tasks in flight when the job stopped are ready again."""
        outcomes: dict[str, str] = {}
        reasons: dict[str, str] = {}
        self.outcome: dict[str, str] = {}
        for item in self.store.items(TASKS):
            error = item.error or ""
            if item.state == "done":
                self.outcome[item.key] = (item.result or {}).get("outcome", "merged")
                merged = self.outcome[item.key] in MERGED_OUTCOMES
                outcomes[item.key] = State.SUCCEEDED if merged else State.FAILED
                reasons[item.key] = "its merge conflicted"
            elif item.state == "failed" and error.startswith(NOT_STARTED):
                outcomes[item.key] = State.CANCELLED
                reasons[item.key] = error.removeprefix(NOT_STARTED)
            elif item.state == "failed" and not error.startswith(BLOCKED):
                outcomes[item.key], reasons[item.key] = State.FAILED, error
        self.schedule.replay(outcomes, reasons)

    # -- the user's .git (`gitdir`) ------------------------------------------------------

    def _restored(self, paths: list[str]) -> None:
        """The guard put `paths` back: counted each time, noted once per attempt and path,
        naming the task code that ran since the guard last looked."""
        run = self.bench.run
        run.count("orchestrator.git_dir_restored", len(paths))
        suspects = sorted(self._acting | self._acted)
        self._acted.clear()
        if len(suspects) == 1:
            who = suspects[0]
        else:
            who = f"one of {', '.join(suspects)}" if suspects else "task code"
        new = [p for p in paths if (who, p) not in self._noted]
        if new:
            self._noted.update((who, p) for p in new)
            run.note(f"{who} changed {describe(new)}; restored")

    @contextlib.contextmanager
    def _acts(self, who: str) -> Iterator[None]:
        """Task code runs (a worker, its check, a merge resolution, verify) while inside."""
        self._acting.add(who)
        try:
            yield
        finally:
            self._acting.discard(who)
            self._acted.add(who)

    async def _remove_strays(self) -> None:
        """The worktrees tasks made with their own `git worktree add` in the job's worktrees
        folder, unregistered from the user's repository (`Repository.remove_strays`: by what
        git's records say, this run's and a killed run's), and whatever tasks left in that
        folder besides the job's own worktrees deleted; counted, and noted when there were
        any. Worktrees added elsewhere while the job ran (a task's, the user's, another job's:
        they look the same) stay registered and are noted; so is what could not be removed."""
        run, job = self.bench.run, self.bench.job
        own_ids = {t.id for t in self.plan.tasks} | {"integration"}
        own = [job.worktrees / tid for tid in sorted(own_ids)]
        try:
            strays = await self.bench.repo.remove_strays(job.worktrees, own, self._worktrees_before)
            left = await asyncio.to_thread(remove_entries, job.dir, (job.worktrees.name,), own_ids)
        except OSError as exc:
            run.note(f"the worktrees tasks made could not all be removed: {one_line(exc)}")
            return
        if strays.removed:
            run.count("orchestrator.task_worktrees_removed", strays.removed)
            run.note(
                f"{strays.removed} worktree(s) a task made with its own `git worktree add` "
                "unregistered from the repository"
            )
        if strays.outside:
            shown = ", ".join(_flat(p) for p in strays.outside[:5])
            more = f" and {len(strays.outside) - 5} more" if len(strays.outside) > 5 else ""
            run.note(  # the paths a task may have chosen: redacted as its output is
                run.redact(
                    f"{len(strays.outside)} worktree(s) were added to the repository outside "
                    f"the job's folder while it ran, left registered (a task's, yours or "
                    f"another job's): {shown}{more}; `git worktree remove` those that are not "
                    "yours"
                )
            )
        self._unremoved(strays.failed + [f"{job.worktrees / f}" for f in left.failed])

    def _unremoved(self, failed: list[str]) -> None:
        """Note what the job's cleanup could not delete (the job goes on: it is only files)."""
        failed = [f for f in failed if ("cleanup", f) not in self._noted]
        self._noted.update(("cleanup", f) for f in failed)
        if failed:
            shown = "; ".join(_flat(f) for f in failed[:5])
            more = f"; and {len(failed) - 5} more" if len(failed) > 5 else ""
            run = self.bench.run
            run.note(run.redact(f"could not be deleted, left in place: {shown}{more}"))

    def _restore_at_end(self) -> None:
        """The user's .git as it was at the job's start, the last word (workers are gone)."""
        guard = self.bench.repo.guard
        if guard is None:
            return
        try:
            guard.restore()
        except (GitDirChanged, OSError) as exc:
            self.bench.run.note(f"the repository's .git could not be put back: {in_words(exc)}")

    # -- budget ---------------------------------------------------------------------------

    def _free_usd(self) -> float | None:
        left = self.budget.left_usd
        if left is None:
            return None
        held = sum(
            max((r.budget.cap_usd or 0.0) - r.budget.spent_usd, 0.0) for r in self._running.values()
        )
        return max(left - held, 0.0)

    def _allot(self, task: PlannedTask) -> Budget | None:
        """The task's budget (its own cap, within what the job has free), or None when the job
        cannot afford to start it now."""
        own = task.budget_usd or None
        free = self._free_usd()
        if free is None:
            return Budget(own, parent=self.budget)
        if free < 1e-6 or (own is not None and own > free and self._running):
            return None
        return Budget(free if own is None else min(own, free), parent=self.budget)

    def _budget_reason(self) -> str:
        return (
            f"budget: ${self.budget.spent_usd:.4f} of the job's ${self.cap_usd:g} is spent "
            "or held; the task was not started"
        )

    # -- one task -------------------------------------------------------------------------

    def _attempts(self, tid: str) -> list[dict[str, Any]]:
        found = [i for i in self.store.items(ATTEMPTS, "done") if i.key.startswith(f"{tid}#")]
        records = [
            i.result
            for i in found
            if isinstance(i.result, dict) and i.result.get("kind") != "merge-resolution"
        ]
        return sorted(records, key=lambda r: r["number"])

    async def _work(self, tid: str, slot: int, budget: Budget) -> None:
        task, run = self.plan.task(tid), self.bench.run
        earlier = self._attempts(tid)
        fresh = fresh_from(self.store, tid)  # attempts before an `orchestrate retry` don't count
        while not (earlier and earlier[-1]["status"] == "success"):
            if len(earlier) > fresh and earlier[-1].get("fatal"):  # not the task's: no retry
                self._fail(tid, earlier[-1].get("reason") or "failed")
                return
            if len(earlier) - fresh > self.retries:
                self._fail(tid, earlier[-1].get("reason") or "failed")
                return
            if earlier and budget.left_usd is not None and budget.left_usd < 1e-6:
                self._fail(tid, "budget: the task's budget was spent by its earlier attempts")
                return
            number = len(earlier) + 1
            key = f"{tid}#{number}"
            self.store.add(ATTEMPTS, [key])
            self.store.claim(ATTEMPTS, key)
            attempt: Attempt | None = None
            try:  # claimed: whatever happens, it ends (`_broken`), never stays `running`
                self._snapshot("running")  # its attempts count the one under way, as status
                with self._acts(f"task {tid} (attempt {number})"):
                    attempt = await self._attempt(task, number, slot, budget, earlier)
                final = not attempt.success and (attempt.fatal or number - fresh > self.retries)
                if not attempt.success and not final and attempt.branch:  # kept, renamed
                    await self._keep_branch(attempt, number)
            except Exception as exc:  # noqa: BLE001 -- the job's error, not the task's
                attempt, final = self._broken(task, number, attempt, exc), True
            self.store.complete(ATTEMPTS, key, attempt.record(self.bench.run.redact))
            self._stored()
            earlier.append(attempt.record(self.bench.run.redact))
            if not attempt.success:
                run.emit(
                    TaskFailed(
                        task_id=tid,
                        attempt=number,
                        reason=attempt.reason or "failed",
                        final=final,
                        branch=attempt.branch,
                    )
                )
        await self._merge(task, earlier[-1], slot, budget)

    async def _attempt(
        self,
        task: PlannedTask,
        number: int,
        slot: int,
        budget: Budget,
        earlier: list[dict[str, Any]],
    ) -> Attempt:
        started = time.monotonic()
        try:
            chosen = await asyncio.to_thread(self.choose, task, number, earlier)
            # the integration branch as the last finished merge left it (every dependency of a
            # ready task is merged): no git command, and no wait behind merges under way
            start = self.tip
            attempt = await run_attempt(
                self.bench, task, number, chosen, budget, slot, start, earlier
            )
        except (GitError, InputError, OSError) as exc:  # the worker never ran: a status too
            attempt = self._unstarted(task, number, f"could not start the worker: {in_words(exc)}")
        attempt.row.setdefault("duration_s", round(time.monotonic() - started, 3))
        return attempt

    def _unstarted(self, task: PlannedTask, number: int, reason: str) -> Attempt:
        """An attempt that ended before its worker ran (or as far as anyone can tell), and its
        row: a failed trace with `reason`."""
        attempt = Attempt(task.id, number, "", "", "error", reason, "")
        failed = WorkerResult.failed(Task(id=task.id, prompt=task.prompt), "", "error", reason)
        attempt.row = trace_row(self.bench.run, failed, attempt, None, task.prompt)
        return attempt

    async def _keep_branch(self, attempt: Attempt, number: int) -> None:
        """A failed attempt that will be tried again: its worktree removed, its branch kept as
        `<branch>-attempt-<n>` (the next attempt makes the branch again)."""
        kept = f"{attempt.branch}-attempt-{number}"
        await self.bench.repo.remove_worktree(self.bench.job.worktrees / attempt.task_id)
        try:
            await self.bench.repo.rename_branch(attempt.branch, kept)
            attempt.branch = kept
        except GitError as exc:
            self.bench.run.note(
                f"task {attempt.task_id}: the failed attempt's branch was not kept: {exc}"
            )

    def _broken(
        self, task: PlannedTask, number: int, attempt: Attempt | None, exc: Exception
    ) -> Attempt:
        """The attempt, claimed in the store, as it ends when an error of the job's (not the
        task's) stopped it: before it had a result (a router's or an environment's error, a
        bug), or after (its worktree could not be cleared for the next try: git refusing to
        run on an admin dir the task's check swapped for a link). It failed, saying why in
        words, and is `fatal`: the task fails now, and is not paid for again; what its worker
        did and spent stays in its record."""
        if attempt is None:
            attempt = self._unstarted(task, number, _failure(exc))
            attempt.fatal = True  # (a router that raised would be asked, and paid, once a retry)
            return attempt
        attempt.reason = (  # failed: only a failed attempt's worktree is cleared (`_work`)
            f"{attempt.reason or attempt.status}; then the job could not clear its worktree "
            f"for a retry: {_failure(exc)}"
        )
        attempt.fatal = True
        attempt.row.update(status=attempt.status, reason=self.bench.run.redact(attempt.reason))
        return attempt

    def _stored(self) -> None:
        """A row of the job's data was stored or changed: the streamed sinks follow."""
        if self.stream is not None:
            self.stream.poke()

    def _fail(self, tid: str, reason: str) -> None:
        """The task (running) failed for good; every task depending on it is blocked."""
        self.store.fail(TASKS, tid, self.bench.run.redact(reason))
        self.outcome[tid] = "failed"
        blocked = self.schedule.fail(tid, reason)
        self.bench.run.emit(TaskFinished(task_id=tid, status="failed", reason=reason))
        self._block(blocked, tid)

    def _not_started(self, tid: str, reason: str) -> None:
        """The task (ready) will not start (the budget); its dependents are blocked."""
        if self.store.claim(TASKS, tid) is not None:
            self.store.fail(TASKS, tid, self.bench.run.redact(NOT_STARTED + reason))
        self.outcome[tid] = "blocked"
        blocked = self.schedule.cancel(tid, reason)[1:]
        self.bench.run.emit(TaskBlocked(task_id=tid, reason=reason))
        self.bench.run.emit(TaskFinished(task_id=tid, status="blocked", reason=reason))
        self._block(blocked, tid)

    def _block(self, ids: list[str], by: str) -> None:
        for tid in ids:
            reason = self.schedule.reason(tid)
            if self.store.claim(TASKS, tid) is not None:
                self.store.fail(TASKS, tid, self.bench.run.redact(BLOCKED + reason))
            self.outcome[tid] = "blocked"
            self.bench.run.emit(TaskBlocked(task_id=tid, reason=reason, blocked_by=[by]))
            self.bench.run.emit(TaskFinished(task_id=tid, status="blocked", reason=reason))

    # -- merge ----------------------------------------------------------------------------

    async def _merge(
        self, task: PlannedTask, attempt: dict[str, Any], slot: int, budget: Budget
    ) -> None:
        """Merge the task's branch into the integration branch, then say the task ended."""
        repo, run, tid = self.bench.repo, self.bench.run, task.id
        branch = attempt["branch"]
        message = f"Merge task {tid}: {task.title}"
        async with self._merge_lock:  # self.tip: the integration worktree's HEAD
            merged = await repo.merge(self.integration, branch, message, before=self.tip)
            outcome, conflicts, commit = merged.outcome, merged.conflicts, merged.commit
            if outcome == "conflicted" and self.bench.options.resolve_conflicts:
                commit = await self._resolve(task, branch, message, merged.conflicts, slot, budget)
                outcome = "resolved" if commit else "conflicted"
                tip = await repo.tip(self.integration)
            else:  # merged or empty: the new HEAD; conflicted: aborted, HEAD as it was
                tip = merged.commit or self.tip
            self.tip = tip
        result = {
            "outcome": outcome,
            "branch": branch,
            "conflicts": conflicts,
            "merge_commit": commit,
            "integration_commit": tip,
            "attempts": attempt["number"],
            "files": attempt["files"],
            "insertions": attempt["insertions"],
            "deletions": attempt["deletions"],
        }
        self.store.complete(TASKS, tid, result)
        self._stored()
        self.outcome[tid] = outcome
        if outcome in MERGED_OUTCOMES:
            self.schedule.succeed(tid)
            blocked: list[str] = []
        else:
            blocked = self.schedule.fail(tid, f"its merge conflicted in {', '.join(conflicts)}")
        run.emit(
            TaskCompleted(
                task_id=tid,
                attempt=attempt["number"],
                branch=branch,
                files=attempt["files"],
                insertions=attempt["insertions"],
                deletions=attempt["deletions"],
                cost_usd=attempt["cost_usd"],
            )
        )
        run.emit(
            MergeResult(
                task_id=tid, branch=branch, outcome=outcome, conflicts=conflicts, commit=commit
            )
        )
        status = "success" if outcome in MERGED_OUTCOMES else "conflicted"
        reason = None if status == "success" else f"merge conflict in {', '.join(conflicts)}"
        run.emit(TaskFinished(task_id=tid, status=status, reason=reason))
        self._block(blocked, tid)

    async def _resolve(
        self,
        task: PlannedTask,
        branch: str,
        message: str,
        conflicts: list[str],
        slot: int,
        budget: Budget,
    ) -> str | None:
        """A worker resolves the conflict on the integration worktree; the merge commit, or
        None (the merge aborted) when it left a conflict."""
        bench, tid = self.bench, task.id
        files = await bench.repo.start_merge(self.integration, branch, message)
        prompt = (
            f"Resolve a git merge conflict. The branch {branch} (task {tid}: {task.title}) is "
            f"being merged into this worktree and conflicts in: {', '.join(files or conflicts)}."
            " Edit those files so both sides' intent is kept and no conflict marker "
            "(<<<<<<<, =======, >>>>>>>) is left. Do not commit; the merge is committed for you."
            f"\n\nThe task's instruction was:\n{task.prompt}"
        )
        key = f"{tid}#merge"
        self.store.add(ATTEMPTS, [key])
        self.store.claim(ATTEMPTS, key)
        try:
            return await self._resolution(task, branch, message, prompt, slot, budget, key)
        except Exception as exc:  # ended, in words, never left `running`; raised on
            stopped = f"the merge resolution stopped: {_failure(exc)}"
            self.store.fail(ATTEMPTS, key, self.bench.run.redact(stopped))
            await self._fresh_integration()
            raise

    async def _fresh_integration(self) -> None:
        """The integration worktree made again at the last merge's commit, after a merge
        resolution stopped half way in it (the resolver's own git may have left its
        `index.lock` there, which no later merge could pass): removed whole, as a failed
        attempt's worktree is, once the resolver's processes are gone; the branch stays."""
        repo, path = self.bench.repo, self.integration.path
        with contextlib.suppress(GitError, OSError):
            self._unremoved(await repo.remove_worktree(path))
            self.integration = await repo.open_worktree(path, self.integration.branch, self.tip)
            await repo.reset_to(self.integration, self.tip)

    async def _resolution(
        self,
        task: PlannedTask,
        branch: str,
        message: str,
        prompt: str,
        slot: int,
        budget: Budget,
        key: str,
    ) -> str | None:
        """`_resolve`'s worker, and the merge commit it made possible (None: it did not)."""
        bench, tid = self.bench, task.id
        chosen = await asyncio.to_thread(self.choose, task, 0, [])
        work = Task(id=tid, prompt=prompt, metadata={"job": bench.job.name, "merge": branch})
        folder, opts = self.integration.path, env_options(bench, slot)
        with self._acts(f"task {tid} (merge resolution)"):
            if bench.backend is not None:  # the worker where the backend puts it (a shared fs)
                result = await remote_worker(bench, work, chosen, opts, folder, budget)
            else:
                env = in_environment(bench.run, bench.environment_name, opts, folder, budget, None)
                async with env as ctx:
                    result = await run_task(
                        chosen.obj, chosen.name, work, chosen.options, ctx, announce=False
                    )
        commit = None
        if result.success:
            try:
                commit = await bench.repo.finish_merge(self.integration, message)
            except Uncommittable as exc:  # the resolver's own doing: its resolution failed
                result = result.model_copy(update={"status": "failed", "reason": in_words(exc)})
        if commit is None and result.success:
            result = result.model_copy(
                update={"status": "failed", "reason": "conflict markers left"}
            )
        if commit is None:  # the integration worktree as the last merge left it
            try:
                await bench.repo.reset_to(self.integration, self.tip)
            except GitError:  # git cannot (the resolver's git left its index.lock): remade
                await self._fresh_integration()
        attempt = Attempt(
            tid, 0, branch, "", result.status, result.reason, chosen.name, cost_usd=result.cost_usd
        )
        attempt.row = trace_row(bench.run, result, attempt, chosen, prompt)
        record = attempt.record(self.bench.run.redact) | {"kind": "merge-resolution", "number": 0}
        self.store.complete(ATTEMPTS, key, record)
        self._stored()
        return commit

    # -- the end --------------------------------------------------------------------------

    async def _verify(self) -> dict[str, Any] | None:
        command = self.bench.spec.verify
        if not command:
            return None
        bench = self.bench
        with self._acts("the verify command"):
            opened = bench.environment.open(self.integration.path, env_options(bench, 0))
            async with opened as s:
                done = await s.run(command, timeout=VERIFY_TIMEOUT_S)
        verify = {
            "command": command,
            "ok": done.ok,
            "exit_code": done.exit_code,
            "reason": done.reason,
            "duration_s": done.duration_s,
            "output": done.output[-8000:],
        }
        bench.run.emit(
            VerifyResult(
                command=command,
                ok=done.ok,
                exit_code=done.exit_code,
                output=done.output[-4000:],
                duration_s=done.duration_s,
            )
        )
        return verify

    async def _clean_up(self, verify: dict[str, Any] | None) -> None:
        """Remove the worktrees of merged tasks (all or none, as `keep_worktrees` says); those
        of failed and conflicted tasks stay for a look, and the integration worktree stays
        when verify failed or a merge conflicted."""
        keep = self.bench.options.keep_worktrees
        if keep == "all":
            return
        states = self.states()
        gone = [
            self.bench.job.worktrees / tid
            for tid, state in states.items()
            if keep == "none" or state == "merged" or state == "blocked"
        ]
        troubled = (verify is not None and not verify["ok"]) or "conflicted" in states.values()
        if keep == "none" or not troubled:
            gone.append(self.integration.path)
        self._unremoved(await self.bench.repo.remove_worktrees(gone))

    def states(self) -> dict[str, str]:
        """Each task's state in the job's words: pending, ready, running, merged, conflicted,
        failed, blocked."""
        out = {}
        for tid, state in self.schedule.states().items():
            if state is State.SUCCEEDED:
                out[tid] = "merged"
            elif state is State.FAILED:
                out[tid] = "conflicted" if self.outcome.get(tid) == "conflicted" else "failed"
            elif state in (State.BLOCKED, State.CANCELLED):
                out[tid] = "blocked"
            else:
                out[tid] = str(state)
        return out

    def _costs(self) -> dict[str, Any]:
        """The job's cost and planning's: None where a model without a price was used (as
        `orchestrate plan` says "price unknown"), with those models named; a known $0 is 0."""
        tally = self.bench.run.tally
        total = tally.task_cost_usd + (self.planning_usd or 0.0)
        return {
            "cost_usd": None if tally.unpriced else round(total, 6),
            "planning_cost_usd": None if self.planning_usd is None else round(self.planning_usd, 6),
            "cost_unknown_for": sorted(tally.unpriced),
        }

    def _snapshot(self, status: str, verify: dict[str, Any] | None = None) -> dict[str, Any]:
        """job.json: the job as it stands (rewritten as tasks and attempts start and end, final
        at the end). A job that stopped (`cancelled`, `interrupted`) has no task ready or
        running: those are `pending`, as the store and `orchestrate status` have them (`resume`
        runs them). Each task's `attempts` is `status.attempt_counts`, `status`'s own count."""
        states = self.states()
        if status in STOPPED:
            states = {t: "pending" if s in ("ready", "running") else s for t, s in states.items()}
        tasks: dict[str, Any] = {}
        tries = attempt_counts(self.store, running=True)  # a stopped job's are pending again
        for item in self.store.items(TASKS):
            attempts = self._attempts(item.key)
            entry: dict[str, Any] = {
                "state": states.get(item.key, item.state),
                "cost_usd": attempts_cost(attempts),
                "duration_s": round(sum(a["row"].get("duration_s") or 0.0 for a in attempts), 3),
            }
            if item.state == "done":
                entry.update(item.result or {})
            elif item.state == "failed":
                entry["reason"] = item.error
                if attempts:
                    entry["branch"] = attempts[-1].get("branch")
            entry["attempts"] = tries.get(item.key, 0)  # as `orchestrate status` counts them
            tasks[item.key] = entry
        counts: dict[str, int] = {}
        for entry in tasks.values():
            counts[entry["state"]] = counts.get(entry["state"], 0) + 1
        path = critical_path(self.plan)
        wall = self.earlier_wall_s + time.monotonic() - self.started  # every run's
        on_path = sum(tasks.get(t, {}).get("duration_s", 0.0) for t in path)
        result = {
            "job": self.bench.job.name,
            "status": status,
            "base": self.base,
            "integration_branch": self.integration.branch,
            "integration_commit": self._last_integration_commit(),
            "counts": counts,
            "tasks": tasks,
            "verify": verify,
            **self._costs(),
            "budget_usd": self.cap_usd,
            "environment": self.bench.environment_name,
            "wall_s": round(wall, 3),
            "critical_path": path,
            "critical_path_s": round(on_path, 3),
            "kept_worktrees": sorted(
                p.name for p in self.bench.job.worktrees.glob("*") if p.is_dir()
            )
            if status in ("done", "failed")
            else None,
        }
        write_json(self.bench.job.result_file, result)
        return result


def _flat(text: str, limit: int = 300) -> str:
    """A path or name as a note says it: one line (a task chose it), cut at `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _failure(exc: BaseException) -> str:
    """Why a task failed when its work raised: an explained error's own words (a git command
    that failed, say), `orchestrator error: Type: text` for anything else (a bug to report)."""
    return in_words(exc) if isinstance(exc, EXPLAINED) else f"orchestrator error: {one_line(exc)}"


__all__ = ["ATTEMPTS", "TASKS", "Cancelled", "JobRunner", "Worktree"]
