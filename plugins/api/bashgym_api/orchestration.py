"""Orchestration jobs over HTTP: a spec submitted becomes a plan (`bashgym orchestrate plan`),
approved (`approve`), carried out (`run --yes`), cancelled, resumed, a task retried, each
command a child process of the server, as for run jobs.

An orchestration job's directory holds the API's files (job.json, launch.json, job.log, the
spec as submitted) and, in `job/`, the orchestrator's job directory (plan.json, spec.json, its
result) which is also its run directory (events.jsonl, run.json, the run's lock): what the
dashboard shows of each task (state, worker, branch, cost, merge, output tail) is read from
plan.json and the orchestrator's events, never from memory. A command this installation lacks
is a 501 naming it.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from markupsafe import Markup

from bashgym.resume import read_status
from bashgym_api import procs
from bashgym_api.body import JsonBody
from bashgym_api.jobs import (
    CANCEL_FILE,
    EVENTS_FILE,
    JOB_FILE,
    LOG_FILE,
    ORCHESTRATOR_DIR,
    JobError,
    log_tail,
    read_json,
    write_json,
)

if TYPE_CHECKING:
    from bashgym_api.app import State

PLAN_FILE = "plan.json"
SUFFIXES = {"md": ".md", "markdown": ".md", "toml": ".toml", "yaml": ".yaml", "yml": ".yaml"}
OUTPUT_TAIL = 2000  # characters of each task's output kept for the page


def routes(app: FastAPI) -> None:
    from bashgym_api.app import state

    @app.post("/api/orchestrations", status_code=201, tags=["orchestration"])
    async def submit(request: Request, body: JsonBody = None):
        """Submit a development spec (`{"spec": TEXT, "format": "md"|"toml"|"yaml"}`): the
        planner makes a task DAG (`bashgym orchestrate plan`); the job then waits for
        approval."""
        st, body = state(request), body or {}
        text, fmt = body.get("spec"), str(body.get("format") or "md").lower().lstrip(".")
        if not isinstance(text, str) or not text.strip():
            raise JobError(422, "spec: the text of a spec (Markdown, TOML or YAML)")
        if fmt not in SUFFIXES:
            raise JobError(422, f"format: one of {', '.join(sorted(SUFFIXES))}")
        await asyncio.to_thread(_no_secrets, st, {"spec": text}, "the spec")
        st.commands.require(["orchestrate", "plan"])
        title = _title(text)
        job_dir = st.jobs.new_dir(title, "orchestration", {"spec_format": fmt})
        spec_file = job_dir / f"spec{SUFFIXES[fmt]}"
        spec_file.write_text(text)
        odir = job_dir / ORCHESTRATOR_DIR
        argv = [*procs.bashgym_argv(), "orchestrate", "plan", str(spec_file), "--job", str(odir)]
        st.jobs.launch(job_dir, argv)
        return {"id": job_dir.name, "status": "planning", "url": f"/api/jobs/{job_dir.name}"}

    @app.get("/api/orchestrations/{job_id}", tags=["orchestration"])
    async def status(request: Request, job_id: str) -> dict[str, Any]:
        """The plan's tasks, each with its state, worker, branch, cost, merge and output."""
        return detail(state(request), job_id)

    @app.put("/api/orchestrations/{job_id}/plan", tags=["orchestration"])
    async def edit_plan(request: Request, job_id: str, plan: JsonBody = None) -> dict[str, Any]:
        """Replace a plan waiting for approval (an edited plan.json): refused with the reason
        when its tasks do not form a DAG (a cycle, an unknown dependency, a repeated id)."""
        st, plan = state(request), plan or {}
        job_dir = _orchestration_dir(st, job_id)
        if _status(st, job_dir) != "awaiting_approval":
            raise JobError(409, f"job {job_id!r} has no plan waiting for approval")
        tasks = plan.get("tasks")
        problems = dag_problems(tasks)
        if problems:
            raise JobError(422, "; ".join(problems))
        await asyncio.to_thread(_no_secrets, st, plan, "the plan")
        plan_file = job_dir / ORCHESTRATOR_DIR / PLAN_FILE
        write_json(plan_file, {**read_json(plan_file), **plan, "approved": False})
        return detail(st, job_id)

    @app.post("/api/orchestrations/{job_id}/approve", tags=["orchestration"])
    async def approve(request: Request, job_id: str) -> dict[str, Any]:
        """Approve the plan and carry it out (`orchestrate approve`, then `run --yes`)."""
        st = state(request)
        job_dir = _orchestration_dir(st, job_id)
        if _status(st, job_dir) != "awaiting_approval":
            raise JobError(409, f"job {job_id!r} has no plan waiting for approval")
        odir = job_dir / ORCHESTRATOR_DIR
        problems = dag_problems(read_json(odir / PLAN_FILE).get("tasks"))
        if problems:
            raise JobError(422, "the plan cannot run: " + "; ".join(problems))
        st.commands.require(["orchestrate", "approve"])
        st.commands.require(["orchestrate", "run"])
        bashgym = " ".join(_quote(a) for a in procs.bashgym_argv())
        script = (
            f"{bashgym} orchestrate approve {_quote(str(odir))} && "
            f"exec {bashgym} orchestrate run {_quote(str(odir))} --yes"
        )
        (job_dir / CANCEL_FILE).unlink(missing_ok=True)
        st.jobs.launch(job_dir, ["/bin/sh", "-c", script])
        return {"id": job_id, "status": "running"}

    @app.delete("/api/orchestrations/{job_id}", tags=["orchestration"])
    async def cancel(request: Request, job_id: str) -> dict[str, Any]:
        """Stop the job (`orchestrate cancel`): running workers end, the job can resume."""
        st = state(request)
        job_dir = _orchestration_dir(st, job_id)
        st.commands.require(["orchestrate", "cancel"])
        if not st.jobs.running(job_dir):
            raise JobError(409, f"job {job_id!r} is not running ({_status(st, job_dir)})")
        (job_dir / CANCEL_FILE).write_text(str(time.time()))
        odir = str(job_dir / ORCHESTRATOR_DIR)
        argv = [*procs.bashgym_argv(), "orchestrate", "cancel", odir, "--wait", "0"]
        procs.start(argv, job_dir / LOG_FILE, env=st.config.child_env)
        return {"id": job_id, "status": "cancelling"}

    @app.post("/api/orchestrations/{job_id}/resume", tags=["orchestration"])
    async def resume(request: Request, job_id: str) -> dict[str, Any]:
        """Carry an interrupted, cancelled or failed job on (`orchestrate resume`)."""
        st = state(request)
        job_dir = _orchestration_dir(st, job_id)
        status = _status(st, job_dir)
        if status not in ("cancelled", "interrupted", "failed", "retrying"):
            raise JobError(409, f"job {job_id!r} is {status}: nothing to resume")
        st.commands.require(["orchestrate", "resume"])
        (job_dir / CANCEL_FILE).unlink(missing_ok=True)
        odir = str(job_dir / ORCHESTRATOR_DIR)
        st.jobs.launch(job_dir, [*procs.bashgym_argv(), "orchestrate", "resume", odir])
        return {"id": job_id, "status": "running"}

    @app.post("/api/orchestrations/{job_id}/tasks/{task_id}/retry", tags=["orchestration"])
    async def retry(request: Request, job_id: str, task_id: str) -> dict[str, Any]:
        """Run a failed or blocked task again (`orchestrate retry JOB TASK`)."""
        st = state(request)
        job_dir = _orchestration_dir(st, job_id)
        odir = job_dir / ORCHESTRATOR_DIR
        ids = [t.get("id") for t in read_json(odir / PLAN_FILE).get("tasks") or []]
        if task_id not in ids:
            known = ", ".join(map(str, ids))
            raise JobError(404, f"job {job_id!r} has no task {task_id!r} (tasks: {known})")
        if st.jobs.running(job_dir):
            raise JobError(409, f"job {job_id!r} is running: cancel it first, or wait")
        # what `orchestrate retry` takes: a failed task, or a blocked one (its failed cause)
        tasks, _, _ = task_states(read_json(odir / PLAN_FILE).get("tasks") or [],
                                  odir / EVENTS_FILE)  # fmt: skip
        state_now = next(t["state"] for t in tasks if t["id"] == task_id)
        if state_now not in RETRYABLE:
            raise JobError(
                409, f"task {task_id!r} is {state_now}: only a failed or blocked task is retried"
            )
        st.commands.require(["orchestrate", "retry"])
        argv = [*procs.bashgym_argv(), "orchestrate", "retry", str(odir), task_id]
        st.jobs.launch(job_dir, argv)
        return {"id": job_id, "task": task_id, "status": "running"}


RETRYABLE = ("failed", "blocked", "budget")


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _no_secrets(st: State, doc: dict[str, Any], what: str) -> None:
    """A 422 when the spec or plan holds a secret: it is stored in the job's folder (spec.md,
    plan.json) and returned by the API, as a run job's spec is (`specs.refuse_secrets`)."""
    from bashgym_api.specs import refuse_secrets

    host, settings = st.plugins.get()
    refuse_secrets(doc, host, settings, what)


def _title(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
        if line.lower().startswith("title") and "=" in line:
            return line.split("=", 1)[1].strip().strip("\"'")
    return "orchestration"


def _orchestration_dir(st: State, job_id: str) -> Path:
    job_dir = st.jobs.dir(job_id)
    if read_json(job_dir / JOB_FILE).get("kind") != "orchestration":
        raise JobError(404, f"job {job_id!r} is a pipeline run, not an orchestration job")
    return job_dir


def _status(st: State, job_dir: Path) -> str:
    return st.jobs.orchestration_status(job_dir)


def detail(st: State, job_id: str) -> dict[str, Any]:
    """The job: status, plan, each task's live state from the events, merges and verify."""
    job_dir = _orchestration_dir(st, job_id)
    odir = job_dir / ORCHESTRATOR_DIR
    job = read_json(job_dir / JOB_FILE)
    plan = read_json(odir / PLAN_FILE)
    run = read_status(odir)
    status = _status(st, job_dir)
    tasks, merges, verify = task_states(plan.get("tasks") or [], odir / EVENTS_FILE)
    result = read_json(odir / JOB_FILE) or None  # the orchestrator's result of the job
    error = None
    if status == "failed":
        error = run.get("error") or log_tail(job_dir / LOG_FILE, 5) or "the job's process ended"
    return {
        "id": job_id,
        "kind": "orchestration",
        "label": job.get("label"),
        "status": status,
        "created_at": job.get("created_at"),
        "age_s": round(time.time() - float(job.get("created_at") or time.time()), 1),
        "plan": {k: v for k, v in plan.items() if k != "tasks"} or None,
        "tasks": tasks,
        "merges": merges,
        "verify": verify,
        "result": result,
        "cost_usd": run.get("cost_usd"),
        "counts": run.get("counts"),
        "error": error,
        "run_dir": str(odir),
        "report_url": None,
    }


def task_states(
    planned: list[dict[str, Any]], events: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """Each planned task with what its events say (state, worker, branch, cost, merge, the
    tail of its output); the merge results; the verify result in words."""
    tasks = {
        str(t.get("id")): {
            "id": str(t.get("id")), "title": t.get("title"),
            "depends_on": t.get("depends_on") or [],
            "priority": t.get("priority"), "state": "pending", "worker": None, "branch": None,
            "cost_usd": None, "merge": None, "reason": None, "attempts": 0, "output_tail": None,
        }
        for t in planned
    }  # fmt: skip
    output: dict[str, str] = defaultdict(str)
    merges: list[dict[str, Any]] = []
    verify = None
    for event in _events(events):
        kind, tid = event.get("type"), str(event.get("task_id"))
        task = tasks.get(tid)
        if kind == "merge_result":
            merges.append({k: event.get(k) for k in ("task_id", "outcome", "conflicts", "branch")})
        if kind == "verify_result":
            verify = f"verify `{event.get('command')}`: {'passed' if event.get('ok') else 'failed'}"
        if task is None:
            continue
        if kind == "task_started":
            task.update(state="running", worker=event.get("executor"))
            task["attempts"] += 1
        elif kind == "task_completed":
            task.update(state="completed", branch=event.get("branch"))
            task["cost_usd"] = event.get("cost_usd")
        elif kind == "task_failed":
            task["state"] = "failed" if event.get("final") else "retrying"
            task["reason"] = event.get("reason")
            task["branch"] = event.get("branch") or task["branch"]
        elif kind == "task_blocked":
            task.update(state="blocked", reason=event.get("reason"))
        elif kind == "merge_result":
            task["merge"] = event.get("outcome")
            if event.get("outcome") in ("merged", "resolved", "empty"):
                task["state"] = "merged"
            elif event.get("outcome") == "conflicted":
                task["state"] = "conflicted"
        elif kind == "task_finished" and task["state"] == "running":
            task["state"] = "done" if event.get("status") == "success" else str(event.get("status"))
        elif kind in ("worker_output", "task_output"):
            output[tid] = (output[tid] + str(event.get("text") or ""))[-OUTPUT_TAIL:]
    for tid, text in output.items():
        tasks[tid]["output_tail"] = text
    return list(tasks.values()), merges, verify


def _events(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue  # a line torn by a kill
    except OSError:
        return []
    return out


def dag_problems(tasks: Any) -> list[str]:
    """Why `tasks` do not form a DAG: not a list of tasks with ids, a repeated id, a
    dependency on no task, a cycle (named, e.g. `a -> b -> a`)."""
    if not isinstance(tasks, list) or not tasks:
        return ["'tasks' must be a non-empty list of tasks"]
    problems, ids = [], []
    for i, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            return [f"tasks[{i}] is not a task with a string 'id'"]
        ids.append(task["id"])
    for tid in {t for t in ids if ids.count(t) > 1}:
        problems.append(f"task id {tid!r} is used more than once")
    graph = {t["id"]: [str(d) for d in t.get("depends_on") or []] for t in tasks}
    for tid, deps in graph.items():
        for dep in deps:
            if dep not in graph:
                problems.append(f"task {tid!r} depends on {dep!r}, which is no task")
    cycle = _cycle(graph)
    if cycle:
        problems.append(f"the tasks' dependencies form a cycle: {' -> '.join(cycle)}")
    return problems


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One cycle of `graph` (task -> its dependencies) as a path back to its start, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    for start in graph:
        if color[start] != WHITE:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path = [start]
        color[start] = GREY
        while stack:
            node, i = stack[-1]
            deps = [d for d in graph[node] if d in graph]
            if i < len(deps):
                stack[-1] = (node, i + 1)
                nxt = deps[i]
                if color[nxt] == GREY:
                    return [*path[path.index(nxt) :], nxt]
                if color[nxt] == WHITE:
                    color[nxt] = GREY
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = BLACK
                stack.pop()
                path.pop()
    return None


def dag_svg(tasks: list[dict[str, Any]] | None) -> Markup:
    """The task DAG as inline SVG: one column per depth (a task right of what it depends on),
    an arrow per dependency, each node classed by its state (the script recolours it live).
    Every text is escaped here: task ids and titles come from a model."""
    tasks = tasks or []
    if not tasks:
        return Markup("<p class='hint'>no plan yet</p>")
    graph = {t["id"]: [d for d in t.get("depends_on") or [] if d] for t in tasks}
    if _cycle(graph):
        return Markup("<p class='error'>the plan's dependencies form a cycle</p>")
    depth: dict[str, int] = {}

    def level(tid: str) -> int:
        if tid not in depth:
            depth[tid] = 1 + max((level(d) for d in graph.get(tid, []) if d in graph), default=-1)
        return depth[tid]

    columns: dict[int, list[str]] = defaultdict(list)
    for t in tasks:
        columns[level(t["id"])].append(t["id"])
    w, h, gap_x, gap_y = 170, 46, 60, 18
    pos = {tid: (20 + c * (w + gap_x), 20 + r * (h + gap_y))
           for c, ids in columns.items() for r, tid in enumerate(ids)}  # fmt: skip
    width = 40 + len(columns) * (w + gap_x) - gap_x
    height = 40 + max(len(ids) for ids in columns.values()) * (h + gap_y) - gap_y
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="task graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#98a2b3"/>'
        "</marker></defs>",
    ]
    for t in tasks:
        x2, y2 = pos[t["id"]]
        for dep in graph[t["id"]]:
            if dep in pos:
                x1, y1 = pos[dep]
                parts.append(
                    f'<path class="edge" d="M{x1 + w},{y1 + h / 2} C{x1 + w + gap_x / 2},'
                    f'{y1 + h / 2} {x2 - gap_x / 2},{y2 + h / 2} {x2},{y2 + h / 2}"/>'
                )
    for t in tasks:
        x, y = pos[t["id"]]
        tid, state = html.escape(t["id"]), html.escape(str(t.get("state") or "pending"))
        title = html.escape(str(t.get("title") or ""))
        parts.append(
            f'<g class="node s-{state}" data-task="{tid}"><title>{title}</title>'
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 19}" font-weight="600">{html.escape(t["id"][:22])}</text>'
            f'<text class="state" x="{x + 8}" y="{y + 37}" font-size="12">{state}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
