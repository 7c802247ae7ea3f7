"""Verified outcomes, read back from earlier runs: what `bashgym router fit` learns from.

An agent run (bashgym-work-tasks) keeps each task in its store's `tasks` namespace: the Task as
the item's payload and the task's row as its result. A row says which executor ran it
(`executor`; older rows only in the trace's provenance), what it cost (`cost_usd`), and, for a
task with a check, whether the work was VERIFIED (`verified`: the check command exited 0 after
the executor succeeded; False when the check failed or the executor gave up). Only tasks with a
check give outcomes: for a task without one, `verified` would hold only the failures the agent
admitted, never a success, and the student's pass rate would be learned wrong. The agent's own
claim (`status`, `success`) is never read as success. An attempt that ended in `error` (the
executor broke: a missing binary, a model that did not answer) says nothing about the task and
is left out too.

A routed run's task that failed on the student and ran again on the teacher has a second item
(its key ends in `.escalated`; payload `{"task", "of", "route"}`): an outcome of the teacher on
the ORIGINAL task (`of`), with the original task's features. Features are the ones the router
recorded at route time (FEATURES_NAMESPACE) where it routed the run, else computed from the
stored Task: the same code either way.

Reading is tolerant: a run without routing info (a plain `-x student` or `-x claude-cli` run with
checks) gives its executor's outcomes; everything left out is counted by reason, and `fit` says
so; only when no run holds a single verified outcome is it an error.

Which executor is the student and which the teacher is what the runs recorded: a routed run's
run.json `routing.teacher` and run.toml `[router]` (its `student` and `teacher` options) —
`roles` reads them, so a fit never falls back to a default name the runs did not use. Flags
override; runs that recorded different names are refused, named, unless a flag settles it.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError
from bashgym.records import Task
from bashgym.resume import read_status
from bashgym.store import RunStore
from bashgym_routers_confidence.features import FEATURES_NAMESPACE, task_features

TASKS_NAMESPACE = "tasks"  # where bashgym-work-tasks keeps each task and its row
DEFAULT_NAMES = {"student": "student", "teacher": "claude-cli"}  # the router's and fit's defaults

# why an attempt is left out: each reads after "N attempt(s) left out: "
NO_CHECK = "its task has no check"
NO_VERDICT = "no verdict (a run from before checks)"
EXECUTOR_ERROR = "it ended in an executor error"
NO_EXECUTOR = "no executor recorded"
NOT_FINISHED = "not finished"
NOT_READABLE = "its task cannot be read"
RUN_WITHOUT_TASKS = "run without tasks"  # a run, not an attempt (see `left_out`)


@dataclass(frozen=True)
class Outcome:
    """One executor's verified attempt at one task."""

    task_id: str
    executor: str
    features: dict[str, float]
    passed: bool  # verified: the task's check passed after its executor succeeded
    cost_usd: float | None = None
    turns: int | None = None
    run: str = ""
    attempt: str = "first"  # "escalated": a second attempt after the student's failed check
    model: str | None = None  # the model the executor ran (a cost unknown: it has no price)


@dataclass
class Read:
    """What a set of run dirs gave: outcomes, and rows left out, counted by reason."""

    outcomes: list[Outcome] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    runs: list[str] = field(default_factory=list)
    recorded: dict[str, dict[str, str]] = field(default_factory=dict)  # run -> role -> name


def read_runs(run_dirs: Iterable[Path]) -> Read:
    """Every verified outcome in `run_dirs` (InputError when a path is not a run dir, or when
    none of them holds a verified outcome)."""
    read = Read()
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        if not (run_dir / "state.db").is_file():
            why = "no state.db" if run_dir.is_dir() else "not a folder"
            raise InputError(f"{run_dir} is not a run directory of an agent run ({why})")
        read.runs.append(str(run_dir))
        read.recorded[str(run_dir)] = recorded_roles(run_dir)
        store = RunStore(run_dir / "state.db")
        try:
            recorded = {i.key: i.result for i in store.items(FEATURES_NAMESPACE, "done")}
            items = store.items(TASKS_NAMESPACE)
        finally:
            store.close()
        if not items:
            read.skipped[RUN_WITHOUT_TASKS] += 1
        firsts = {i.key: i.payload for i in items if not _escalated(i.payload)}
        for item in items:
            if item.state != "done" or not isinstance(item.result, Mapping):
                read.skipped[NOT_FINISHED] += 1
                continue
            try:  # an escalated attempt is an outcome on the task it escalates
                of = str(item.payload["of"]) if _escalated(item.payload) else item.key
                task = Task.model_validate(firsts.get(of) or item.payload.get("task"))
            except (ValueError, TypeError, KeyError):
                read.skipped[NOT_READABLE] += 1
                continue
            features = recorded.get(of)
            if not isinstance(features, Mapping):
                features = task_features(task)
            attempt = "escalated" if _escalated(item.payload) else "first"
            outcome = _outcome(task, item.result, dict(features), str(run_dir), attempt)
            if isinstance(outcome, str):
                read.skipped[outcome] += 1
            else:
                read.outcomes.append(outcome)
    if not read.outcomes:
        left = "; ".join(left_out(read.skipped)) or "no tasks"
        raise InputError(
            f"no verified outcomes in {', '.join(read.runs)} ({left}): the router learns only "
            "from tasks whose success their check verified; give tasks a check (a `check` "
            "column: a command that exits 0 when the work is right) and run them first"
        )
    return read


def _escalated(payload: Any) -> bool:
    """An escalated attempt's item (`{"task", "of", "route"}`), not a Task."""
    return isinstance(payload, Mapping) and "of" in payload and "task" in payload


def has_check(task: Task) -> bool:
    """The task has a check command (its row's `check` column), so `verified` is a verdict."""
    check = task.metadata.get("check")
    return isinstance(check, str) and bool(check.strip())


def _outcome(
    task: Task, row: Mapping[str, Any], features: dict[str, float], run: str, attempt: str
) -> Outcome | str:
    """The Outcome `row` records, or why it is not one (a skipped-count reason)."""
    verified = row.get("verified")
    if not has_check(task):
        return NO_CHECK
    if not isinstance(verified, bool):
        return NO_VERDICT
    if row.get("status") == "error":
        return EXECUTOR_ERROR
    executor = row.get("executor") or _trace_executor(row)
    if not executor:
        return NO_EXECUTOR
    return Outcome(
        task_id=task.id,
        executor=str(executor),
        features=features,
        passed=verified,
        cost_usd=_number(row.get("cost_usd")),
        turns=_turns(row),
        run=run,
        attempt=attempt,
        model=_model(row),
    )


def left_out(skipped: Mapping[str, int]) -> list[str]:
    """`skipped` in words, one entry per reason: "1 attempt left out: its task has no check"."""
    out = []
    for why, n in skipped.items():
        if not n:
            continue
        if why == RUN_WITHOUT_TASKS:
            out.append(f"{counted(n, 'run')} without tasks")
        else:
            out.append(f"{counted(n, 'attempt')} left out: {why}")
    return out


def counted(n: int, noun: str) -> str:
    """`1 attempt`, `3 attempts`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def recorded_roles(run_dir: Path) -> dict[str, str]:
    """The student and teacher a routed run recorded (`{}` for a plain run): run.json's
    `routing.teacher`, else its run.toml `[router] teacher`; the student from run.toml's
    `[router] student` (run.json does not say). A file that is missing or unreadable records
    nothing: the outcomes still count, under the names the flags or the other runs give."""
    out: dict[str, str] = {}
    try:
        router = tomllib.loads((run_dir / "run.toml").read_text()).get("router")
    except (OSError, ValueError):
        router = None
    if isinstance(router, Mapping):
        for role in ("student", "teacher"):
            if isinstance(router.get(role), str) and router[role]:
                out[role] = router[role]
    routing = read_status(run_dir).get("routing")
    if isinstance(routing, Mapping) and isinstance(routing.get("teacher"), str):
        out["teacher"] = routing["teacher"]
    return out


def roles(read: Read, student: str | None = None, teacher: str | None = None) -> tuple[str, str]:
    """The student's and the teacher's executor names for a fit on `read`: a flag where given,
    else the one name the runs recorded, else the default (`DEFAULT_NAMES`). InputError, one
    line, when runs recorded different names for a role no flag names, or when student and
    teacher come out the same (a router between an executor and itself learns nothing)."""
    given = {"student": student, "teacher": teacher}
    names: dict[str, str] = {}
    for role in ("student", "teacher"):
        if given[role]:
            names[role] = str(given[role])
            continue
        seen: dict[str, list[str]] = {}
        for run, recorded in read.recorded.items():
            if role in recorded:
                seen.setdefault(recorded[role], []).append(run)
        if len(seen) > 1:
            which = "; ".join(f"{name!r} in {', '.join(runs)}" for name, runs in seen.items())
            raise InputError(
                f"the runs recorded different {role}s ({which}): fit them apart, or name the "
                f"{role} with --{role}"
            )
        names[role] = next(iter(seen), DEFAULT_NAMES[role])
    name = names["student"]
    if name == names["teacher"]:
        where = [run for run, rec in read.recorded.items() if name in rec.values()]
        said = f" (recorded by {', '.join(where)})" if where else ""
        raise InputError(
            f"student and teacher are both {name!r}{said}: a router between an "
            "executor and itself learns nothing; name the other with --teacher or --student"
        )
    return names["student"], names["teacher"]


def _trace_executor(row: Mapping[str, Any]) -> str | None:
    """The executor named in the row's Trace (a plain, unrouted run's rows)."""
    try:
        trace = json.loads(row.get("trace") or "{}")
    except (TypeError, ValueError):
        return None
    prov = trace.get("provenance") if isinstance(trace, dict) else None
    return prov.get("executor") if isinstance(prov, dict) else None


def _model(row: Mapping[str, Any]) -> str | None:
    """The model the row's executor ran: its `model` column, else the Trace's provenance."""
    model = row.get("model")
    if isinstance(model, str) and model:
        return model
    try:
        trace = json.loads(row.get("trace") or "null")
    except (TypeError, ValueError):
        return None
    prov = trace.get("provenance") if isinstance(trace, dict) else None
    model = prov.get("model") if isinstance(prov, dict) else None
    return model if isinstance(model, str) and model else None


def _turns(row: Mapping[str, Any]) -> int | None:
    """The model's turns: the Trace's `outcome.num_turns`, else its assistant messages (None:
    no trace)."""
    try:
        trace = json.loads(row.get("trace") or "null")
    except (TypeError, ValueError):
        return None
    if not isinstance(trace, dict):
        return None
    said = (trace.get("outcome") or {}).get("num_turns")
    if isinstance(said, int) and not isinstance(said, bool):
        return said
    messages = trace.get("messages")
    if not isinstance(messages, list):
        return None
    return sum(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
