"""Run directories as an agent run leaves them (its store's `tasks` items: the Task, and the row
bashgym-work-tasks writes for it), built from simulated tasks, for the fit to read back.

Shared by the tests as the module `confidence_runs` (pytest's importlib mode leaves a test's
folder off `sys.path`, so conftest.py puts it there)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym_routers_confidence.simulate import SimTask

from bashgym.records import Message, Outcome, Provenance, Task, Trace, Usage, trace_to_row
from bashgym.store import RunStore

ESCALATED = ".escalated"  # bashgym-work-tasks' key suffix of an escalated attempt


@dataclass
class Attempt:
    """One executor's attempt at a task, as a run records it."""

    task: Task
    executor: str
    passed: bool | None  # the row's `verified`
    cost_usd: float | None = 0.01
    turns: int = 3
    status: str | None = None  # default: success when passed, else failed
    attempt: str = "first"
    route: dict[str, Any] | None = None
    model: str | None = None  # the model the executor ran (the row's `model`)


def row_of(a: Attempt) -> dict[str, Any]:
    """The row bashgym-work-tasks' stage keeps for an attempt (its `run_one`)."""
    status = a.status or ("success" if a.passed else "failed")
    messages = [Message(role="user", content=a.task.prompt)]
    messages += [Message(role="assistant", content=f"turn {i}") for i in range(a.turns)]
    trace = Trace(
        id=a.task.id,
        messages=messages,
        usage=Usage(input_tokens=100 * a.turns, output_tokens=20 * a.turns),
        cost_usd=a.cost_usd,
        outcome=Outcome(success=status == "success"),
        provenance=Provenance(source="executor", executor=a.executor, model=a.model),
    )
    route = a.route or {}
    return {
        **trace_to_row(trace),
        "task_id": a.task.id,
        "prompt": a.task.prompt,
        "status": status,
        "reason": None if a.passed else "check failed (exit 1)",
        "executor": a.executor,
        "final_text": "done",
        "verified": a.passed,
        "check_exit": None if a.passed is None else (0 if a.passed else 1),
        "check_output": None,
        "attempt": a.attempt,
        "route_reason": route.get("reason"),
        "route_score": route.get("score"),
        "escalate_to": route.get("escalate_to"),
        "workspace": None,
        "workspace_files": [],
    }


def write_run(
    run_dir: Path,
    attempts: Iterable[Attempt],
    *,
    status: str = "ok",
    routed: tuple[str, str] | None = None,
) -> Path:
    """A run dir holding `attempts` in its store (state.db) and a run.json, as a run leaves
    them: first attempts keyed by task id, escalated ones by id + ESCALATED. `routed`: the
    (student, teacher) of a `--router confidence` run, recorded where a run records them
    (run.toml's `[router]`, run.json's `routing.teacher`)."""
    items = []
    for a in attempts:
        if a.attempt == "escalated":
            key = a.task.id + ESCALATED
            again = a.task.model_copy(update={"id": key, "prompt": a.task.prompt + "\n---"})
            route = {"executor": a.executor, "reason": "escalated"}
            payload: Any = {"task": again.model_dump(mode="json"), "of": a.task.id}
            payload["route"] = route
        else:
            key, payload = a.task.id, a.task.model_dump(mode="json")
        items.append((key, payload, row_of(a)))
    store = RunStore(run_dir / "state.db")
    try:
        assert store.add("tasks", [(key, payload) for key, payload, _ in items]) == len(items)
        for key, _, row in items:  # each claimed and completed, as the stage does
            assert store.claim("tasks", key) is not None
            store.complete("tasks", key, row)
    finally:
        store.close()
    meta: dict[str, Any] = {"status": status}
    toml = f'out = "{run_dir}"\n\n[executor]\nplugin = "student"\n'
    if routed is not None:
        student, teacher = routed
        meta["routing"] = {"router": "confidence", "teacher": teacher}
        toml += f'\n[router]\nplugin = "confidence"\nstudent = "{student}"\n'
        toml += f'teacher = "{teacher}"\nthreshold = 0.0\nescalate = true\n'
    (run_dir / "run.json").write_text(json.dumps(meta))
    (run_dir / "run.toml").write_text(toml)
    return run_dir


def checked(task: Task) -> Task:
    """`task` with a check command, as a source row's `check` column gives it."""
    return task.model_copy(update={"metadata": {**task.metadata, "check": "test -f done.txt"}})


def both_ran(sims: Iterable[SimTask], student: str = "student", teacher: str = "claude-cli"):
    """Each simulated task run by the student and by the teacher (plain, unrouted runs)."""
    for s in sims:
        task = checked(s.task)
        yield Attempt(task, student, s.student_passes, s.student_cost, s.turns)
        yield Attempt(task, teacher, s.teacher_passes, s.teacher_cost, s.turns)
