"""A plan: the spec decomposed into a DAG of tasks, each a worker's prompt with a budget.

`plan.json` is written by `bashgym orchestrate plan`, may be edited by hand, and is validated
again whenever it is read (`read_plan`): a plan with problems is never run. `validate_plan` lists
every problem at once -- duplicate ids, ids that cannot be branch or folder names, unknown or
self dependencies, cycles (each named), empty prompts, budgets over the job's cap -- so one
repair request (planning.py) or one look at the file fixes them all.

Task ids become branch names (`bashgym/<job>/<task>`) and folder names, so they must be readable
safe names (`bashgym_procs.names.is_readable`): 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a
letter or digit, no `..`, not ending in `.` or `.lock`; `integration` is the job's own branch.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from bashgym_procs.names import is_readable
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bashgym.contracts import InputError

Priority = Literal["critical", "high", "normal", "low"]
PRIORITIES: tuple[Priority, ...] = ("critical", "high", "normal", "low")  # most urgent first
RESERVED_IDS = frozenset({"integration"})  # bashgym/<job>/integration is the merge branch
ID_RULE = (
    "1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, no '..', "
    "not ending in '.' or '.lock'"
)


class PlanError(InputError):
    """A plan that cannot be used (the model's, or a hand-edited plan.json): names every
    problem. `errors` holds them one by one."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = list(errors or [])


class PlannedTask(BaseModel):
    """One task of the DAG: what a worker is asked to do, after what, and at what cost."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(description="Short unique name; becomes a branch and a folder name.")
    title: str = Field(description="The task in one line.")
    description: str = Field(default="", description="What the task is, for a reader.")
    priority: Priority = "normal"
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of tasks whose work this one needs."
    )
    files: list[str] = Field(
        default_factory=list, description="Paths the task expects to touch, repository-relative."
    )
    estimated_turns: int = Field(default=10, ge=1, description="Agent turns it should take.")
    budget_usd: float = Field(default=1.0, ge=0, description="The task's cost cap.")
    prompt: str = Field(description="The worker's whole instruction.")
    check: str | None = Field(default=None, description="Command that must pass after it.")

    @field_validator("depends_on")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))  # a dependency named twice is one dependency

    @field_validator("check")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value if value is None or value.strip() else None


class Plan(BaseModel):
    """The task DAG for one spec, the model that planned it, and whether a person approved it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    title: str
    tasks: list[PlannedTask]
    planner: str = Field(description="The model (alias and id) that made the plan.")
    approved: bool = False
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def task(self, task_id: str) -> PlannedTask:
        """The task with this id (KeyError when none)."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    @property
    def total_budget_usd(self) -> float:
        return sum(task.budget_usd for task in self.tasks)


def _task_schema() -> dict[str, Any]:
    props: dict[str, Any] = {
        "id": {
            "type": "string",
            "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
            "description": "Short unique kebab-case name (becomes a git branch name).",
        },
        "title": {"type": "string", "description": "The task in one line."},
        "description": {"type": "string", "description": "What the task is, for a reader."},
        "priority": {"type": "string", "enum": list(PRIORITIES)},
        "depends_on": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Ids of tasks whose code this task needs (it starts from their work).",
        },
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Repository-relative paths the task expects to create or change.",
        },
        "estimated_turns": {"type": "integer", "minimum": 1},
        "budget_usd": {"type": "number", "minimum": 0},
        "prompt": {
            "type": "string",
            "minLength": 1,
            "description": "The worker's complete instruction: what to change, where, how to "
            "tell it is done. The worker sees only this and the repository.",
        },
    }
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


# What the planning model must answer with: {"tasks": [...]} (a task's optional `check` is the
# spec's, not the model's, so the schema leaves it out).
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"tasks": {"type": "array", "minItems": 1, "items": _task_schema()}},
    "required": ["tasks"],
    "additionalProperties": False,
}


def validate_plan(plan: Plan, cap_usd: float | None = None) -> list[str]:
    """Every problem that keeps `plan` from running, one line each (empty: it can run).
    `cap_usd`: the job's budget cap (None: no cap)."""
    errors: list[str] = []
    if not plan.tasks:
        errors.append("the plan has no tasks")
    seen: dict[str, int] = defaultdict(int)
    for task in plan.tasks:
        seen[task.id] += 1
    errors += [f"task id {tid!r} is used by {n} tasks" for tid, n in seen.items() if n > 1]
    for task in plan.tasks:
        if task.id in RESERVED_IDS:
            errors.append(f"task id {task.id!r} is reserved (the job's merge branch)")
        elif not is_readable(task.id):
            errors.append(f"task id {task.id!r} is not a safe name ({ID_RULE})")
        for dep in task.depends_on:
            if dep == task.id:
                errors.append(f"task {task.id!r} depends on itself")
            elif dep not in seen:
                errors.append(f"task {task.id!r} depends on {dep!r}, which is not a task")
        if not task.prompt.strip():
            errors.append(f"task {task.id!r} has an empty prompt")
        if cap_usd is not None and task.budget_usd > cap_usd:
            errors.append(
                f"task {task.id!r} has a budget of ${task.budget_usd:g}, over the job's cap "
                f"of ${cap_usd:g}"
            )
    for cycle in cycles(plan):
        shown = [*cycle, cycle[0]]
        if len(shown) > 12:  # a cycle through thousands of tasks: its ends name it
            shown = [*shown[:6], f"... {len(cycle) - 10} more ...", *shown[-5:]]
        errors.append(f"dependency cycle: {' -> '.join(shown)} (each depends on the next)")
    total = plan.total_budget_usd
    if cap_usd is not None and total > cap_usd + 1e-9:
        errors.append(
            f"the tasks' budgets add up to ${total:g}, over the job's cap of ${cap_usd:g}"
        )
    return errors


def _graph(plan: Plan) -> dict[str, list[str]]:
    """Task id -> the ids it depends on that exist (duplicates: the first task's)."""
    graph: dict[str, list[str]] = {}
    for task in plan.tasks:
        graph.setdefault(task.id, task.depends_on)
    return {tid: [d for d in deps if d in graph and d != tid] for tid, deps in graph.items()}


def cycles(plan: Plan) -> list[list[str]]:
    """One cycle (ids in dependency order) per strongly connected group of tasks that depend on
    each other; iterative, so 10,000 tasks in a chain do not hit Python's recursion limit."""
    graph = _graph(plan)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            deps = graph[node]
            if i < len(deps):
                work.append((node, i + 1))
                dep = deps[i]
                if dep not in index:
                    work.append((dep, 0))
                elif dep in on_stack:
                    low[node] = min(low[node], index[dep])
                continue
            if low[node] == index[node]:  # the root of a strongly connected group
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(_cycle_in(group, graph, node))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _cycle_in(group: set[str], graph: dict[str, list[str]], start: str) -> list[str]:
    """A cycle through `start` inside a strongly connected `group` (a shortest one, by BFS)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for dep in graph[node]:
                if dep not in group:
                    continue
                if dep == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]  # start, what start depends on, ..., what depends on start
                if dep not in came_from:
                    came_from[dep] = node
                    following.append(dep)
        frontier = following
    return sorted(group)  # unreachable for a strongly connected group


def topological_order(plan: Plan) -> list[str]:
    """Ids with every task after its dependencies (tasks in cycles left out)."""
    graph = _graph(plan)
    waiting = {tid: len(deps) for tid, deps in graph.items()}
    dependents: dict[str, list[str]] = defaultdict(list)
    for tid, deps in graph.items():
        for dep in deps:
            dependents[dep].append(tid)
    order = [tid for tid, n in waiting.items() if n == 0]
    for tid in order:  # grows as it goes
        for child in dependents[tid]:
            waiting[child] -= 1
            if waiting[child] == 0:
                order.append(child)
    return order


def critical_path(plan: Plan) -> list[str]:
    """The chain of dependent tasks with the most estimated turns, first task first: no
    schedule finishes sooner than it takes."""
    turns = {task.id: task.estimated_turns for task in reversed(plan.tasks)}
    graph = _graph(plan)
    best: dict[str, tuple[int, str | None]] = {}  # id -> (turns up to and including it, prev)
    for tid in topological_order(plan):
        prev = max(graph[tid], key=lambda d: best[d][0], default=None)
        best[tid] = (turns[tid] + (best[prev][0] if prev else 0), prev)
    if not best:
        return []
    node: str | None = max(best, key=lambda t: best[t][0])
    path = []
    while node is not None:
        path.append(node)
        node = best[node][1]
    return path[::-1]


def _norm(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") + ("/" if path.endswith("/") else "")


def file_overlaps(plan: Plan) -> list[tuple[str, str, list[str]]]:
    """Pairs of tasks that expect to touch the same files (a folder named with a trailing `/`
    covers the files under it): `(first id, second id, the shared paths)`, in plan order."""
    owners: dict[str, list[str]] = defaultdict(list)  # path -> task ids naming it
    folders: dict[str, list[str]] = defaultdict(list)  # "dir/" -> task ids naming it
    for task in plan.tasks:
        for path in dict.fromkeys(_norm(p) for p in task.files if p.strip()):
            (folders if path.endswith("/") else owners)[path].append(task.id)
    position: dict[str, int] = {}
    for i, task in enumerate(plan.tasks):
        position.setdefault(task.id, i)
    shared: dict[tuple[str, str], list[str]] = defaultdict(list)

    def pairs(ids: Iterable[str], path: str) -> None:
        ordered = sorted(dict.fromkeys(ids), key=position.__getitem__)
        for i, first in enumerate(ordered):
            for second in ordered[i + 1 :]:
                if path not in shared[(first, second)]:
                    shared[(first, second)].append(path)

    for path, ids in [*owners.items(), *folders.items()]:
        pairs(ids, path)
    for path, ids in owners.items():  # a file under a folder another task names
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) + "/"
            for other in folders.get(folder, ()):
                for tid in ids:
                    if tid != other:
                        pairs((tid, other), path)
    return sorted(
        ((a, b, paths) for (a, b), paths in shared.items() if a != b),
        key=lambda row: (position[row[0]], position[row[1]]),
    )


def depends_transitively(plan: Plan, task_id: str, on: str) -> bool:
    """Whether `task_id` starts from `on`'s work (directly or through other tasks)."""
    graph = _graph(plan)
    todo, seen = [task_id], {task_id}
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep == on:
                return True
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def plan_errors(data: Any) -> tuple[Plan | None, list[str]]:
    """`data` (parsed plan.json) as a Plan, or None and its type errors, one line each, named by
    task (`tasks[2] 'api': budget_usd: ...`)."""
    try:
        return Plan.model_validate(data), []
    except ValidationError as exc:
        return None, [_problem(error, data) for error in exc.errors()]


def _problem(error: Any, data: Any) -> str:
    loc = list(error["loc"])
    where = ""
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        task = data["tasks"][loc[1]] if isinstance(data, dict) else None
        name = task.get("id") if isinstance(task, dict) else None
        where = f"tasks[{loc[1]}]" + (f" {name!r}" if isinstance(name, str) else "")
        loc = loc[2:]
    field = ".".join(str(part) for part in loc)
    where = ": ".join(part for part in (where, field) if part) or "plan"
    if error["type"] == "missing":
        return f"{where}: required, missing"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key"
    given = repr(error.get("input"))
    given = given if len(given) <= 60 else given[:57] + "..."
    return f"{where}: {error['msg'].removeprefix('Value error, ')} (got {given})"


def read_plan(path: Path, *, cap_usd: float | None = None) -> Plan:
    """The plan in `path`, validated again (it may have been edited by hand); PlanError naming
    the file and every problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: cannot read the plan ({exc})") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}: not valid JSON ({exc})") from None
    plan, errors = plan_errors(data)
    if plan is not None:
        errors = validate_plan(plan, cap_usd)
    if errors:
        raise PlanError(f"{path}: " + "; ".join(errors), errors)
    assert plan is not None
    return plan


def redacted(plan: Plan, redact: Callable[[str], str]) -> Plan:
    """`plan` with secrets redacted from every text of it (prompts, titles, checks), as a plain
    run's seed rows are before any executor sees them: a secret the planner's answer carried
    (or a hand edit added) never lands in plan.json or the run store, and a worker gets the
    prompt as the job's files hold it. The redactor keeps JSON valid (the kernel's Scrubbing)."""
    text = plan.model_dump_json()
    clean = redact(text)
    return plan if clean == text else Plan.model_validate_json(clean)


def write_plan(plan: Plan, path: Path) -> None:
    """Write `plan` as indented JSON, atomically: a reader sees the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(plan.model_dump_json(indent=2) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
