"""`orchestrate retry JOB TASK`: a task that ended `failed` (or `blocked` because of one) gets a
fresh attempt budget and its job goes on, with the tasks it blocked unblocked.

Why a job that is running is refused rather than queued: the run store is the one truth, and
only the process that holds the job's lock may change it; a queued retry would need a second
channel into the running loop (like `cancel`) and a second place where a task's state lives.
Refusing is one line and never races: cancel (or wait), then retry.

What retry changes, in this order (each step safe to repeat if it is killed half way):
1. the kept branch of each failed task's last attempt (`bashgym/<job>/<task>`) is renamed
   `<branch>-attempt-<n>` (the next attempt would reset it), its worktree removed;
2. a `retry:<task>:<k>` item in the run store records how many attempts the task had, so the
   job counts its retries from there (`fresh_from`);
3. the failed task and every task blocked behind it go back to `pending` in one transaction;
4. run.json says `retrying` (and the current inputs' hash: plan.json was likely edited to
   fix the check), which the kernel's engine resumes as it does an interrupted run (in place:
   every other task stays as it ended, merged work stays merged, each reopened task ends once
   more) without the job claiming it was interrupted (`RETRYING`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError
from bashgym.resume import read_status
from bashgym.store import RunStore, lock_holder, lock_run
from bashgym_orchestrator.job import Job, write_json
from bashgym_orchestrator.plan import Plan
from bashgym_orchestrator.worktrees import Repository, task_branch

TASKS, ATTEMPTS, META = "tasks", "attempts", "job"
BLOCKED, NOT_STARTED = "blocked: ", "not started: "  # as dispatch writes them
RETRY_PREFIX = "retry:"
RETRYING = "retrying"  # run.json's status between a retry and its run (bashgym.resume.UNFINISHED)


class RetryRefused(InputError):
    """The task cannot be retried now (one line saying why and what to do)."""


def fresh_from(store: RunStore, task_id: str) -> int:
    """How many of the task's attempts came before its latest `retry` (0 when never retried):
    its retries are counted from there."""
    prefix = f"{RETRY_PREFIX}{task_id}:"
    marks = [
        int((i.result or {}).get("after_attempt", 0))
        for i in store.items(META, "done")
        if i.key.startswith(prefix)
    ]
    return max(marks, default=0)


def _descendants(plan: Plan, roots: Iterable[str]) -> set[str]:
    found: set[str] = set()
    todo = list(roots)
    while todo:
        tid = todo.pop()
        for task in plan.tasks:
            if tid in task.depends_on and task.id not in found:
                found.add(task.id)
                todo.append(task.id)
    return found


def _ancestors(plan: Plan, task_id: str) -> set[str]:
    found: set[str] = set()
    todo = list(plan.task(task_id).depends_on)
    while todo:
        tid = todo.pop()
        if tid not in found:
            found.add(tid)
            todo.extend(plan.task(tid).depends_on)
    return found


def _word(item: Any) -> str:
    if item is None:
        return "not started"
    if item.state == "done":
        outcome = (item.result or {}).get("outcome", "merged")
        return "conflicted" if outcome == "conflicted" else "merged"
    return str(item.state)


def choose(plan: Plan, items: dict[str, Any], task_id: str) -> tuple[list[str], list[str]]:
    """(the failed tasks to run again, every task to reopen) for a retry of `task_id`."""
    item = items.get(task_id)
    error = (item.error or "") if item is not None else ""
    if item is not None and item.state == "failed" and not error.startswith(BLOCKED):
        roots = [task_id]  # failed, or never started for the budget
    elif item is not None and item.state == "failed":  # blocked: retry what blocked it
        roots = [
            t
            for t in _ancestors(plan, task_id)
            if (up := items.get(t)) is not None
            and up.state == "failed"
            and not (up.error or "").startswith(BLOCKED)
        ]
        if not roots:
            raise RetryRefused(
                f"task {task_id!r} is blocked by a merge conflict, not a failure: resolve it "
                "by hand (its branch is kept) or run with --resolve-conflicts"
            )
    else:
        raise RetryRefused(
            f"task {task_id!r} is {_word(item)}: only a failed task, or one blocked by a "
            "failed task, can be retried"
        )
    reopen = [
        t
        for t in [*roots, *sorted(_descendants(plan, roots))]
        if (i := items.get(t)) is not None and i.state == "failed"
    ]
    return sorted(roots), list(dict.fromkeys(reopen))


def _reopen(db_path: Path, keys: list[str]) -> int:
    """Put failed task items back to pending, all in one transaction. Why SQL here: the kernel's
    RunStore has no way back from `failed` (its items end once); proposed to its owner as
    `RunStore.reopen(namespace, keys)`. Only `failed` rows of `tasks` change."""
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("BEGIN IMMEDIATE")
        changed = 0
        for key in keys:
            changed += db.execute(
                "UPDATE items SET state = 'pending', owner = NULL, error = NULL, result = NULL, "
                "finished_at = NULL WHERE namespace = ? AND key = ? AND state = 'failed'",
                (TASKS, key),
            ).rowcount
        db.execute("COMMIT")
        return changed
    finally:
        db.close()


async def _keep_branch(repo: Repository, job: Job, task_id: str, number: int) -> str | None:
    """Rename the failed last attempt's branch out of the next attempt's way; the new name."""

    branch = task_branch(job.name, task_id)
    kept = f"{branch}-attempt-{number}"
    exists = await repo.run(repo.main, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if not exists.ok:
        return None
    await repo.remove_worktree(job.worktrees / task_id)
    await repo.rename_branch(branch, kept)
    return kept


def retry(job: Job, task_id: str, input_hash: str) -> list[str]:
    """Reopen `task_id` of `job` (see the module docstring); the tasks reopened. RetryRefused
    when the job is running or the task is not failed or blocked."""
    plan = job.plan()
    ids = [t.id for t in plan.tasks]
    if task_id not in ids:
        raise InputError(f"{job.dir} has no task {task_id!r} (tasks: {', '.join(ids)})")
    if not (job.dir / "state.db").is_file() or not (job.dir / "run.toml").is_file():
        raise RetryRefused(f"{job.dir} has not run yet: `bashgym orchestrate run {job.dir}`")
    lock = lock_run(job.dir, f"bashgym orchestrate retry {job.dir} {task_id}")
    if lock is None:
        raise RetryRefused(
            f"{job.dir} is running ({lock_holder(job.dir)}): a running job is not retried; "
            f"`bashgym orchestrate cancel {job.dir}` first, or wait for it to end"
        )
    with lock:
        store = RunStore(job.dir / "state.db")
        try:
            items = {i.key: i for i in store.items(TASKS)}
            roots, reopen = choose(plan, items, task_id)
            spec = job.spec()
            repo = Repository(spec.repository) if spec.repository else None
            for root in roots:
                numbers = [
                    int(i.key.rsplit("#", 1)[1])
                    for i in store.items(ATTEMPTS, "done")
                    if i.key.startswith(f"{root}#") and i.key.rsplit("#", 1)[1].isdigit()
                ]
                done = max(numbers, default=0)
                if done and repo is not None:
                    asyncio.run(_keep_branch(repo, job, root, done))
                k = 1 + sum(1 for i in store.items(META) if i.key.startswith(f"retry:{root}:"))
                key = f"{RETRY_PREFIX}{root}:{k}"
                store.add(META, [key])
                if store.claim(META, key) is not None:
                    store.complete(META, key, {"after_attempt": done})
        finally:
            store.close()
        _reopen(job.dir / "state.db", reopen)
        status = read_status(job.dir)
        status.update(status=RETRYING, input_hash=input_hash)
        write_json(job.dir / "run.json", status)
    return reopen


__all__ = ["RETRYING", "RetryRefused", "choose", "fresh_from", "retry"]
