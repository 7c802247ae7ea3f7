"""The `orchestrator` source: a job's worker traces as rows, after running the job if asked.

`bashgym orchestrate run` is a run of the kernel's engine whose source is this one with
`execute = true` and whose run directory is the job dir: the job's tasks run (`dispatch`), and
every attempt's Trace -- its task, branch, check and merge outcome in `extra.orchestrator` and
in flat columns -- comes out as a row for the run's sinks, with the plan itself as one more row
(spec -> task DAG, a decomposition example). `bashgym run -s orchestrator --set source.job=DIR
-k nemo-jsonl` reads the same rows from a job that ran, and runs nothing.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, Source
from bashgym_orchestrator.options import OrchestratorOptions, OrchestratorSettings

# Every `bashgym run` loads this plugin (its settings table) and registers this source, so
# this module imports only what registering needs: the job, spec (YAML, pydantic models), plan,
# events and the kernel's store and records are imported by the methods that use them (a run
# that never orchestrates paid ~60-150 ms for them; tests/test_startup.py holds the line).
if TYPE_CHECKING:
    from bashgym.contracts import RunContext
    from bashgym.store import RunStore
    from bashgym_orchestrator.job import Job

PLAN_KIND, WORKER_KIND = "plan", "worker"
PLANNING_NAMESPACE = "planning"  # the run-store item that says planning was charged


class JobCancelled(KeyboardInterrupt):
    """`orchestrate cancel` stopped the job: the run ends `interrupted`, so `orchestrate
    resume` finishes it (the engine treats it as Ctrl-C)."""


class OrchestratorSource(Source[OrchestratorOptions]):
    """A job's worker traces (one row per attempt) and its plan; runs the job when `execute`."""

    output_format = "traces"

    def inputs(self, options: OrchestratorOptions) -> list[Path]:
        """The job's spec and plan: a plan edited after the job started never resumes silently
        (the job dir's own store and logs change as it runs, so they are not inputs)."""
        folder = Path(options.job).expanduser()
        return [p for p in (folder / "spec.json", folder / "plan.json") if p.is_file()]

    def open(self, options: OrchestratorOptions, run: RunContext) -> list[dict[str, Any]]:
        from bashgym_orchestrator.job import Job

        job = Job.at(options.job)
        if options.execute:
            if os.path.realpath(job.dir) != os.path.realpath(run.run_dir):
                raise InputError(
                    "source.execute runs a job in its own directory: use `bashgym orchestrate "
                    f"run {job.dir}` (or --out {job.dir})"
                )
            execute_job(job, options, run)
        return job_rows(job, run)


def execute_job(job: Job, options: OrchestratorOptions, run: RunContext) -> dict[str, Any]:
    """Run the job's tasks to the end (see `dispatch`); its result, as job.json has it."""
    from bashgym.runspec import RunConfigError, default_environment
    from bashgym_orchestrator.attempt import Workbench
    from bashgym_orchestrator.dispatch import Cancelled, JobRunner
    from bashgym_orchestrator.plan import redacted
    from bashgym_orchestrator.remote import backend_of
    from bashgym_orchestrator.stream import SinkStream
    from bashgym_orchestrator.worktrees import Repository

    spec = job.spec()
    plan = redacted(job.plan(), run.redact)  # a hand edit's secret: not stored, not prompted
    if not plan.approved:
        raise InputError(
            f"the plan of {job.dir} is not approved: look at it, then `bashgym orchestrate "
            f"approve {job.dir}` (or run with --yes)"
        )
    config = run.settings.table(OrchestratorSettings)
    registry = run.registry
    if registry is None:
        raise InputError("the orchestrator needs the run's plugin registry")
    pick = Picker(options, config, run)
    env_name = options.environment or config.environment
    try:
        env_name = env_name or default_environment(registry)
        environment = _get(registry, "environments", env_name)
    except RunConfigError as exc:
        raise InputError(str(exc)) from None
    if (why := environment.obj.available()) is not None:
        raise InputError(f"environment {env_name!r} cannot run here: {why}")
    env_opts = _options(environment, options.environment_options, f"environment {env_name}")
    pick.check(env_opts, env_name)
    if spec.repository is None:
        raise InputError(f"{job.dir}/spec.json names no repository")
    backend = backend_of(run.run_dir, registry)  # the engine opened it: workers run through it
    bench = Workbench(
        run, job, spec, Repository(spec.repository), options, environment.obj, env_name, env_opts,
        backend,
    )  # fmt: skip
    runner = JobRunner(
        bench,
        plan,
        pick,
        retries=options.retries if options.retries is not None else config.retries,
        workers=options.workers or spec.workers or config.workers,
        cap_usd=options.budget_usd or spec.budget_usd,
        stream=SinkStream.of_run(job, run, options.stream_sinks),
        planning_usd=charge_planning(job, run),
    )
    job.cancel_file.unlink(missing_ok=True)
    try:
        return asyncio.run(runner.run())
    except Cancelled as exc:
        runner._snapshot("cancelled")
        job.cancel_file.unlink(missing_ok=True)
        raise JobCancelled(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: job.json says so, not `running` any more
        if hasattr(runner, "schedule"):  # (it got as far as starting tasks)
            runner._snapshot("interrupted")
        else:  # a resume stopped before: not `cancelled` from the last stop (`status` reads it)
            _restamp(job, "interrupted")
        raise


def _restamp(job: Job, status: str) -> None:
    """job.json's status set to `status` where it says the job is running or was cancelled
    (what an earlier run wrote: untrue of the run that stopped now)."""
    from bashgym_orchestrator.job import write_json

    result = job.result()
    if result is not None and result.get("status") in ("running", "cancelled"):
        write_json(job.result_file, {**result, "status": status})


def charge_planning(job: Job, run: RunContext) -> float | None:
    """Charge what planning cost (`orchestrate plan` saved it) to the run, once whatever the
    resumes (a run-store item says it was done; a resumed run's tally reads the charge back
    from events.jsonl); the USD it cost, which the job's budget counts as spent, None when
    its model has no price (unknown, not $0)."""
    from bashgym.events import UsageCharged

    spend = job.planning()
    if spend is None or not spend.requests:
        return 0.0
    store = run.store
    store.add(PLANNING_NAMESPACE, ["planning"])
    if store.claim(PLANNING_NAMESPACE, "planning") is not None:
        run.emit(
            UsageCharged.of(
                spend.usage,
                spend.cost_usd,
                model=spend.model or "planner",
                alias=spend.alias,
                requests=spend.requests,
            )
        )
        store.complete(PLANNING_NAMESPACE, "planning", spend.as_json())
    return spend.cost_usd


class Picker:
    """Which executor runs a task: the configured one, or the router's choice (and on a retry
    the executor its route escalates to)."""

    def __init__(
        self, options: OrchestratorOptions, config: OrchestratorSettings, run: RunContext
    ) -> None:
        self.options, self.run = options, run
        registry = run.registry
        assert registry is not None
        self.registry = registry
        router = options.router or config.router
        self.router = _get(registry, "routers", router) if router else None
        self.router_options = (
            _options(self.router, options.router_options, f"router {router}")
            if self.router
            else None
        )
        self.default = options.executor or config.executor
        names = [self.default]
        if self.router is not None:
            names = list(self.router.obj.executors(self.router_options)) or names
        self.executors = {name: self._executor(name) for name in names}
        self.routes: dict[str, Any] = {}

    def _executor(self, name: str) -> Any:
        registered = _get(self.registry, "executors", name)
        given = self.options.executor_options if name == self.default else {}
        options = _options(registered, given, f"executor {name}")
        registered.obj.preflight(options, self.run)
        return registered, options

    def check(self, env_options: Any, env_name: str) -> None:
        for name, (registered, _) in self.executors.items():
            if registered.obj.needs_network and getattr(env_options, "network", True) is False:
                raise InputError(
                    f"executor {name!r} calls its model from inside the environment, and "
                    f"environment {env_name!r} has no network: add --set "
                    "source.environment_options.network=true"
                )

    def __call__(self, task: Any, number: int, earlier: list[dict[str, Any]]) -> Any:
        from bashgym.records import Task
        from bashgym_orchestrator.attempt import Chosen, planned_metadata

        name, why = self.default, "configured"
        if self.router is not None:
            route = self.routes.get(task.id)
            if route is None:
                work = Task(
                    id=task.id,
                    prompt=task.prompt,
                    depends_on=list(task.depends_on),
                    metadata=planned_metadata(task),
                )
                route = self.routes[task.id] = self.router.obj.route(
                    work, self.router_options, self.run
                )
            name, why = route.executor, f"router: {route.reason}"
            if number > 1 and route.escalate_to:
                name, why = route.escalate_to, f"router: escalated after attempt {number - 1}"
        if name not in self.executors:
            self.executors[name] = self._executor(name)
        registered, options = self.executors[name]
        return Chosen(name, registered.obj, options, why)


def _get(registry: Any, kind: str, name: str) -> Any:
    if name not in registry.items[kind]:
        known = ", ".join(registry.names(kind)) or "none installed"
        raise InputError(f"no {kind[:-1]} named {name!r} ({kind}: {known})")
    return registry.get(kind, name)


def _options(registered: Any, given: dict[str, Any], what: str) -> Any:
    from pydantic import ValidationError

    from bashgym.text import explain_validation

    try:
        return registered.obj.Options.model_validate(given)
    except ValidationError as exc:
        raise InputError(f"{what}: {explain_validation(exc)}") from None


# -- reading a job's rows -------------------------------------------------------------------


def job_rows(job: Job, run: RunContext) -> list[dict[str, Any]]:
    """One row per stored attempt (oldest first) and the plan's row."""
    from bashgym.store import RunStore
    from bashgym_orchestrator.events import TracesIngested

    same = os.path.realpath(job.dir) == os.path.realpath(run.run_dir)
    if not same and not (job.dir / "state.db").is_file():
        raise InputError(f"{job.dir} has not run yet: `bashgym orchestrate run {job.dir}`")
    store = run.store if same else RunStore(job.dir / "state.db")
    try:
        rows = [row for _, row in stored_rows(job, store)]
    finally:
        if not same:
            store.close()
    plan_rows = [plan_row_of(job)]
    run.emit(TracesIngested(job=job.name, traces=len(rows), plan_rows=len(plan_rows)))
    return rows + plan_rows


def stored_rows(job: Job, store: RunStore) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """Each stored attempt's row (oldest first), keyed by its version (`stream.row_key`)."""
    from bashgym_orchestrator.dispatch import ATTEMPTS, TASKS
    from bashgym_orchestrator.stream import row_key

    outcomes = {i.key: i for i in store.items(TASKS)}
    rows = []
    for item in store.items(ATTEMPTS, "done"):
        if isinstance(record := item.result, dict):
            task = outcomes.get(record["task_id"])
            rows.append((row_key(item.key, task), _attempt_row(job, record, task)))
    return rows


def _attempt_row(job: Job, record: dict[str, Any], task: Any) -> dict[str, Any]:
    """An attempt's trace row with the orchestrator's facts in `extra.orchestrator` and as
    flat columns (the merge outcome is the task's, for the attempt that was merged)."""
    from bashgym.records import Trace, trace_to_row

    row = dict(record["row"])
    trace = Trace.model_validate_json(row["trace"])
    merged = (
        task is not None
        and task.state == "done"
        and (task.result or {}).get("branch") == record["branch"]
        and (task.result or {}).get("attempts", record["number"]) == record["number"]
    )  # a task retried by `orchestrate retry` has failed attempts on the same branch name
    merge = (task.result or {}).get("outcome") if merged else None
    kind = record.get("kind", WORKER_KIND)
    facts = {
        "job": job.name,
        "kind": kind,
        "task_id": record["task_id"],
        "attempt": record["number"],
        "branch": record["branch"] or None,
        "executor": record["executor"],
        "route": record.get("route"),
        "check": record.get("check"),
        "merge": merge,
        "conflicts": (task.result or {}).get("conflicts", []) if merged else [],
        "files": record.get("files", []),
    }
    trace.provenance.git_branch = facts["branch"]
    trace.provenance.git_commit = record.get("commit")
    trace.extra["orchestrator"] = facts
    check = record.get("check")
    return {
        **row,
        **trace_to_row(trace),
        "kind": kind,
        "job": job.name,
        "task_id": record["task_id"],
        "attempt": record["number"],
        "branch": facts["branch"],
        "check_passed": None if check is None else bool(check.get("ok")),
        "merge": merge,
    }


def plan_row_of(job: Job) -> dict[str, Any]:
    """The plan as a trace row: the planner's prompt and its answer (what a student needs to
    learn decomposition), status success once the plan was approved."""
    from bashgym.records import Message, Provenance, Trace, trace_to_row
    from bashgym_orchestrator.planning import plan_row

    spec, plan = job.spec(), job.plan()
    repo = spec.repository if spec.repository and spec.repository.is_dir() else None
    chat = plan_row(spec, plan, repo=repo, cap_usd=spec.budget_usd)
    messages = chat["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    trace = Trace(
        id=f"{job.name}/plan",
        system_prompt=system,
        messages=[
            Message(role=m["role"], content=m["content"]) for m in messages if m["role"] != "system"
        ],
        provenance=Provenance(
            source="orchestrator",
            model=plan.planner,
            extra={"kind": PLAN_KIND, **chat.get("metadata", {})},
        ),
    )
    trace.outcome.success = plan.approved
    spend = job.planning()
    if spend is not None:  # what the planner's answers cost (the repair request's too)
        trace.usage, trace.cost_usd = spend.usage, spend.cost_usd
    return {
        **trace_to_row(trace),
        "kind": PLAN_KIND,
        "job": job.name,
        "task_id": None,
        "attempt": None,
        "status": "success" if plan.approved else "failed",
        "reason": None if plan.approved else "the plan was not approved",
    }
