"""Where a job stands, read from its directory alone: `orchestrate status` in another terminal
while it runs, and after. The run store (state.db) says each task's state, the event log which
attempt is running on which executor, job.json the result, run.json whether a process still
holds the job (its pid alive) and what it spent."""

from __future__ import annotations

import json
import os
from typing import Any

from bashgym.resume import read_status
from bashgym.store import RunStore
from bashgym_orchestrator.job import Job

TASKS, ATTEMPTS = "tasks", "attempts"
# the words dispatch writes in job.json for a job that stopped before its end (`orchestrate
# cancel`, Ctrl-C): the run itself ends `interrupted` either way (`resume` goes on), and
# `status` says job.json's word (a kill -9 writes none: see `job_state`)
STOPPED = ("cancelled", "interrupted")


def alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def attempts_cost(attempts: list[dict[str, Any]]) -> float | None:
    """What a task's attempts cost: None when one spent tokens at no known price (an attempt
    that never reached a model, with no tokens, costs a known 0)."""
    total = 0.0
    for attempt in attempts:
        cost = attempt.get("cost_usd")
        if cost is None:
            row = attempt.get("row") or {}
            if (row.get("input_tokens") or 0) + (row.get("output_tokens") or 0):
                return None
            continue
        total += cost
    return round(total, 6)


def attempt_counts(store: RunStore, running: bool) -> dict[str, int]:
    """How many attempts each task has had: the one count job.json and `orchestrate status`
    both give. The attempts that ended, and while the run says `running` (`running`: its
    run.json, so also after a kill -9, whose last job.json counted the attempt under way) the
    one under way; not one a stopped job left (pending again in the store): `resume` runs it
    again under its number, and it never counted toward the task's retries. A merge
    resolution is no attempt."""
    counts: dict[str, int] = {}
    for item in store.items(ATTEMPTS):
        tid, _, number = item.key.rpartition("#")
        if number == "merge":
            continue
        if item.state == "done" or (running and item.state == "running"):
            counts[tid] = counts.get(tid, 0) + 1
    return counts


def reason_text(state: str, reason: Any) -> str:
    """Why a task is `state`, as a person reads it beside the state: without the state's own
    word (the run store's reason for a blocked task starts `blocked: `)."""
    return str(reason or "").removeprefix(f"{state}: ")


def job_state(run: dict[str, Any], result: dict[str, Any], running: bool) -> str:
    """The job's status: `running` while its process lives (`interrupted` once it is gone
    without a word: killed, as its tasks in flight say); how it ended as job.json says it
    (`done`, `failed`, or `cancelled` / `interrupted` for a job that stopped), where the run
    agrees it ended or stopped; else the run's own word (an error; `unknown`; `retrying`
    between `orchestrate retry` reopening tasks and its run starting: `resume` goes on).

    A job killed with `kill -9` leaves job.json saying `running` (and its tasks in flight
    `running`): the process that would rewrite it is gone, and nothing else writes it. Status
    then says `interrupted`, from run.json's `running` and a pid no longer alive; job.json is
    right again once `resume` runs. Each task's attempts agree in both (`attempt_counts`)."""
    said, ended = result.get("status"), run.get("status")
    if ended == "running":
        return "running" if running else "interrupted"
    if ended in ("ok", "empty") or (ended == "interrupted" and said in STOPPED):
        return str(said or "unknown")
    return str(ended or "unknown")


def job_status(job: Job) -> dict[str, Any]:
    """The job's state: each task's, the counts, the run's status, cost and result."""
    plan = job.plan()
    run = read_status(job.dir)
    running = run.get("status") == "running" and alive(run.get("pid"))
    states: dict[str, dict[str, Any]] = {
        t.id: {"state": "pending", "priority": t.priority, "depends_on": t.depends_on}
        for t in plan.tasks
    }
    if (job.dir / "state.db").is_file():
        store = RunStore(job.dir / "state.db")
        try:
            # job.json's count: it counts the attempt under way while the run is `running`,
            # and a kill -9 leaves it so (its last job.json counts that attempt; `resume`
            # runs it again under its number), whether or not a process still holds the job
            tries = attempt_counts(store, run.get("status") == "running")
            for item in store.items(TASKS):
                entry = states.setdefault(item.key, {})
                entry["attempts"] = tries.get(item.key, 0)
                error = item.error or ""
                if item.state == "done":
                    result = item.result or {}
                    merged = result.get("outcome") in ("merged", "empty", "resolved")
                    entry.update(state="merged" if merged else "conflicted", **result)
                elif item.state == "failed":
                    blocked = error.startswith(("blocked: ", "not started: "))
                    entry.update(state="blocked" if blocked else "failed", reason=error)
                elif item.state == "running":
                    entry["state"] = "running" if running else "interrupted"
            ended: dict[str, list[dict[str, Any]]] = {}
            for item in store.items(ATTEMPTS, "done"):
                tid = item.key.rsplit("#", 1)[0]
                if tid in states and isinstance(item.result, dict) and tid + "#merge" != item.key:
                    ended.setdefault(tid, []).append(item.result)
            for tid, records in ended.items():  # None: a model without a price (unknown)
                states[tid]["cost_usd"] = attempts_cost(records)
        finally:
            store.close()
    executors = _executors(job)
    for tid, name in executors.items():
        if tid in states:
            states[tid]["executor"] = name
    counts: dict[str, int] = {}
    for entry in states.values():
        counts[entry["state"]] = counts.get(entry["state"], 0) + 1
    result = job.result() or {}
    status = job_state(run, result, running) if run else None
    status = status or ("approved" if plan.approved else "planned")
    return {
        "job": job.name,
        "dir": str(job.dir),
        "status": status,
        "pid": run.get("pid") if running else None,
        "title": plan.title,
        "approved": plan.approved,
        "counts": counts,
        "tasks": states,
        "cost_usd": None if run.get("cost_unknown_for") else run.get("cost_usd"),
        "cost_unknown_for": run.get("cost_unknown_for", []),
        "verify": result.get("verify"),
        "wall_s": result.get("wall_s"),
        "critical_path": result.get("critical_path"),
        "critical_path_s": result.get("critical_path_s"),
        "integration_branch": result.get("integration_branch"),
        "error": run.get("error"),
    }


def _executors(job: Job) -> dict[str, str]:
    """The executor of each task's latest attempt, from the event log's task_started events."""
    found: dict[str, str] = {}
    log = job.dir / "events.jsonl"
    if not log.is_file():
        return found
    with log.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if '"task_started"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            found[str(event.get("task_id"))] = str(event.get("executor"))
    return found
