"""Routing, checks and escalation of an agent run, and what they add up to.

A run that names a router (`--router NAME`) asks it, per task, which executor runs it and why
(a `Route`); the decision is an event (`TaskRouted`) and columns of the task's row. A task with
a `check` (a shell command in its row) is *verified* when its executor succeeded and the check,
run in the task's workspace through its environment after the executor ended, exits 0 — the
agent's own claim is not verification. An attempt that fails verification and whose route names
`escalate_to` runs again there, with the failed attempt summarized in its prompt (a cascade);
both rows are kept, labelled `attempt` = `first` / `escalated`, and a failed one has status
`failed`, so SFT sinks never take it as a target (it stays a DPO negative).

`routing_report` is run.json's `routing` section, from the rows in the run store (every attempt
of the run, earlier runs' attempts of a resumed run included).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from bashgym.contracts import Route
from bashgym.events import Event
from bashgym.records import Task

Attempt = Literal["first", "escalated"]
ESCALATED = ".escalated"  # suffix of an escalated attempt's task id and store key
SUMMARY_CHARS = 1500  # of the failed attempt's answer and check output, in the teacher's prompt


class TaskRouted(Event):
    """A router's decision for one attempt of a task, and why."""

    type: Literal["task_routed"] = "task_routed"
    task_id: str
    executor: str
    reason: str
    score: float | None = None
    escalate_to: str | None = None
    attempt: Attempt = "first"


class TaskChecked(Event):
    """A task's check ran: `passed` is the exit status 0 (None: it could not finish)."""

    type: Literal["task_checked"] = "task_checked"
    task_id: str
    passed: bool
    exit_code: int | None = None


@dataclass(frozen=True)
class Verdict:
    """How an attempt ended once checked: `verified` is None when the task has no check and its
    executor succeeded (nothing says whether the work is right)."""

    verified: bool | None
    check_exit: int | None = None
    check_output: str = ""


def check_of(task: Task) -> str | None:
    """The task's check command (its row's `check` column), None when it has none."""
    value = task.metadata.get("check")
    return value.strip() if isinstance(value, str) and value.strip() else None


def route_columns(route: Route | None, attempt: Attempt) -> dict[str, Any]:
    """The row's routing columns (None where the run has no router)."""
    return {
        "attempt": attempt,
        "route_reason": route.reason if route else None,
        "route_score": route.score if route else None,
        "escalate_to": route.escalate_to if route else None,
    }


def escalation(task: Task, row: dict[str, Any], route: Route) -> tuple[str, dict[str, Any]]:
    """The store item (key, payload) of `task`'s escalated attempt: the same task on
    `route.escalate_to`, its prompt followed by a summary of the failed attempt `row`."""
    answer = _tail(row.get("final_text") or "", SUMMARY_CHARS) or "(no final answer)"
    why = row.get("reason") or row.get("status")
    if row.get("check") and str(why).startswith("check "):  # which check: the row's command
        why = f"{why}: {row['check']}"
    lines = [
        task.prompt,
        "",
        "---",
        f"An earlier attempt at this task (by {row.get('executor')}) did not pass verification: "
        f"{why}.",
        f"Its final answer was:\n{answer}",
    ]
    if row.get("check_output"):
        lines.append(f"Its check said:\n{_tail(row['check_output'], SUMMARY_CHARS)}")
    lines.append("Your workspace starts fresh. Solve the task.")
    meta = {**task.metadata, "escalated_from": task.id}
    again = Task(id=task.id + ESCALATED, prompt="\n".join(lines), metadata=meta)
    payload = {
        "task": again.model_dump(mode="json"),
        "of": task.id,
        "route": {"executor": route.escalate_to, "reason": f"escalated: {route.reason}",
                  "score": route.score, "escalate_to": None},
    }  # fmt: skip
    return again.id, payload


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-n:]


def routing_report(rows: list[dict[str, Any]], router: str, teacher: str | None) -> dict[str, Any]:
    """run.json's `routing`: per executor its share of tasks (first attempts), attempts,
    verified successes and cost; escalations; the routed run's cost and verified success
    against sending every task to `teacher` — measured where the teacher ran a task, else
    estimated from its mean in this run (said in `basis`), else unknown (None)."""
    first = [r for r in rows if r.get("attempt") != "escalated"]
    escalated = [r for r in rows if r.get("attempt") == "escalated"]
    tasks = len(first)
    shares = Counter(r.get("executor") for r in first)
    executors: dict[str, Any] = {}
    for name in sorted({r.get("executor") for r in rows} - {None}):
        mine = [r for r in rows if r.get("executor") == name]
        executors[name] = {
            "routed": shares[name],
            "share": _ratio(shares[name], tasks),
            "attempts": len(mine),
            **_verified(mine),
            **_cost(mine),
        }
    final = {r["task_id"]: r for r in first} | {r["task_id"]: r for r in escalated}
    return {
        "router": router,
        "teacher": teacher,
        "tasks": tasks,
        "executors": executors,
        "escalations": {"count": len(escalated), **_verified(escalated)},
        "success": _success(list(final.values()), rows, teacher),
        "cost": _savings(rows, tasks, teacher),
    }


def _verified(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Attempts with a verdict (a check ran, or the executor failed), and how many passed."""
    judged = [r for r in rows if r.get("verified") is not None]
    passed = sum(bool(r["verified"]) for r in judged)
    return {
        "checked": len(judged),
        "verified": passed,
        "verified_rate": _ratio(passed, len(judged)),
    }


def _cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    unknown = sum(r.get("cost_usd") is None for r in rows)
    spent = sum(r.get("cost_usd") or 0.0 for r in rows)
    return {"cost_usd": None if unknown else round(spent, 6), "cost_unknown_attempts": unknown}


def _success(final: list[dict[str, Any]], rows: list[dict[str, Any]], teacher: str | None) -> Any:
    """Verified success of the routed run (each task's last attempt) against all-teacher (the
    teacher's last attempt on each task it ran): both rates per task."""
    routed = _verified(final)
    out: dict[str, Any] = {"routed": routed["verified"], "checked": routed["checked"],
                           "routed_rate": routed["verified_rate"]}  # fmt: skip
    # per task, as `routed_rate` is: the teacher's last attempt on each task it ran (counted per
    # attempt, a task it ran twice weighed double, and a routed run could "retain" 150%)
    last = _teacher_by_task(rows, teacher)
    rate, covered = _verified(list(last.values()))["verified_rate"], set(last)
    if teacher is None or rate is None:
        out.update(all_teacher_rate=None, retained_pct=None, basis="unknown: " + (
            "no teacher is known" if teacher is None
            else f"{teacher} has no checked attempt in this run"))  # fmt: skip
        return out
    out["all_teacher_rate"] = rate
    out["retained_pct"] = _pct(routed["verified_rate"], rate)
    every = len(covered) >= len({r["task_id"] for r in rows})
    out["basis"] = (
        f"measured: {teacher} ran every task" if every else
        f"estimated: {teacher}'s verified rate on the {len(covered)} task(s) it ran in this run "
        "(those routed or escalated to it, which may be harder than the rest)"
    )  # fmt: skip
    return out


def _teacher_by_task(rows: list[dict[str, Any]], teacher: str | None) -> dict[str, Any]:
    """The teacher's last attempt on each task it ran, by task id (none without a teacher)."""
    return {r["task_id"]: r for r in rows if teacher and r.get("executor") == teacher}


def _savings(rows: list[dict[str, Any]], tasks: int, teacher: str | None) -> dict[str, Any]:
    """The routed run's cost against all-teacher: measured on the tasks the teacher ran, its
    mean per task there for the rest; unknown when a cost is unknown or it ran none."""
    routed = _cost(rows)["cost_usd"]
    by_task = {task: r.get("cost_usd") for task, r in _teacher_by_task(rows, teacher).items()}
    out: dict[str, Any] = {"routed_usd": routed, "all_teacher_usd": None, "saved_pct": None}
    if teacher is None or not by_task or None in by_task.values():
        why = ("no teacher is known" if teacher is None else f"{teacher} ran no task" if not by_task
               else f"{teacher}'s cost is unknown")  # fmt: skip
        return {**out, "basis": f"unknown: {why}"}
    measured = sum(by_task.values())  # type: ignore[arg-type]
    missing = max(tasks - len(by_task), 0)
    mean = measured / len(by_task)
    out["all_teacher_usd"] = round(measured + mean * missing, 6)
    out["basis"] = (
        f"measured: {teacher} ran every task" if not missing else
        f"estimated: measured on the {len(by_task)} task(s) {teacher} ran, its mean cost per "
        f"task there (${mean:.6g}) for the {missing} it did not run"
    )  # fmt: skip
    if routed is None:
        out["basis"] += "; saved unknown: a routed attempt's cost is unknown"
    else:
        out["saved_pct"] = _pct(out["all_teacher_usd"] - routed, out["all_teacher_usd"])
    return out


def _ratio(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def _pct(n: float | None, of: float | None) -> float | None:
    return None if n is None or not of else round(100 * n / of, 1)
