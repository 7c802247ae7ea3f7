"""`bashgym orchestrate`: plan a spec into a task DAG, approve it, run it, watch it, stop it,
resume it. Every command takes the job directory `plan` made; `run` and `resume` are runs of
the kernel's engine (the same path as `bashgym run`), so the job dir holds run.json,
events.jsonl and the run store like any run."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sqlite3
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import err, fail, out
from rich.markup import escape

from bashgym.contracts import InputError, RunStopped, open_models
from bashgym.plugins import current_host, use_host
from bashgym.resume import read_status
from bashgym.runspec import RunSpec, StepSpec
from bashgym.settings import SettingsError, load_settings
from bashgym_orchestrator.job import Job
from bashgym_orchestrator.plan import PlanError
from bashgym_orchestrator.spec import SPEC_HELP, load_spec

# Help texts hold one line per paragraph and per example: rich keeps a docstring's line breaks
# and wraps again at the width (ragged prose at 80 columns); examples short enough not to wrap.
HELP = (
    "Turn a development spec into merged, verified code, and every worker's trace into data."
    "\n\nA spec (Markdown, TOML or YAML: title, description, constraints, acceptance criteria, "
    "and optional repository, base_branch, setup, copy, verify, check, budget_usd, workers) is "
    "planned into a task DAG by the `planner` model alias (else `default`). Once you approve the "
    "plan, each task runs on an executor (claude-cli, agent-sdk, student, ...) in its own git "
    "worktree and branch `bashgym/<job>/<task>`, N at once; completed branches merge into "
    "`bashgym/<job>/integration` and `verify` runs there. Your checked-out branch and working "
    "tree are never touched."
    "\n\n[bold]Example[/]"
    "\n\n  bashgym orchestrate plan spec.md        # writes JOB/plan.json, shows it"
    "\n  bashgym orchestrate approve JOB"
    "\n  bashgym orchestrate run JOB --workers 3 -x claude-cli -k nemo-jsonl"
    "\n  bashgym orchestrate run JOB -x student --backend ray   # on Ray"
    "\n  bashgym orchestrate status JOB          # from another terminal"
    "\n  bashgym orchestrate cancel JOB          # `resume JOB` goes on later"
    "\n  bashgym orchestrate retry JOB TASK      # fix plan.json first"
)

PLAN_HELP = (
    "Plan SPEC into a task DAG: writes JOB/plan.json and shows it. Nothing runs."
    "\n\nThe plan shows each task's priority, dependencies, estimated turns and budget, the "
    "critical path, the total budget against the spec's cap and the tasks that expect to touch "
    "the same files. Edit plan.json by hand if you like (it is checked again when used), then "
    "`bashgym orchestrate approve JOB`."
)

RUN_HELP = (
    "Run JOB's approved plan: tasks in git worktrees on N workers, merged, verified."
    "\n\nReady tasks (every dependency merged) start by priority, then by the longest chain of "
    "work behind them. A failed task is retried (--retries) with a prompt carrying the failure; "
    "after the last, tasks that depend on it are blocked and the others go on. No task starts "
    "when the spend so far plus what running tasks may still spend would pass --budget. "
    "Completed branches merge into bashgym/<job>/integration (--no-ff); a conflict is kept and "
    "reported. Each worker's trace goes to the sinks (-k), with its task, branch, check and "
    "merge outcome."
    "\n\nWith --backend (e.g. ray) each worker runs where the backend puts it, the rest here; "
    "the job's folders must be at the same paths on every node (a shared filesystem), and "
    "run.json's `backend` says where the workers ran. `resume` and `retry` keep the job's "
    "backend."
    "\n\nOptions of the orchestrator source (--set source.KEY=VALUE), e.g. each worker's turns:"
    "\n\n  bashgym orchestrate run JOB --set source.executor_options.max_turns=20"
    "\n\nExit 0 when it ran to the end and a task merged (job.json says which), 1 when it "
    "failed or no task merged (every one failed, conflicted or was blocked: job.json's status "
    "is `failed`), 130 when cancelled or interrupted (`orchestrate resume JOB` goes on), 2 for "
    "a mistake here."
)

orchestrate = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode="rich")

# JOB, as every help text here names it (and as run's RUN_FILE, options' ROLE NAME are upper case)
JobArg = Annotated[
    Path, typer.Argument(metavar="JOB", help="The job directory `orchestrate plan` made.")
]


def _job(path: Path) -> Job:
    try:
        return Job.at(path)
    except InputError as exc:
        raise fail(str(exc)) from None


def _repository(given: Path | None, spec_repo: Path | None) -> Path:
    """--repo, else the spec's repository, else the git checkout around the current folder."""
    if given is not None or spec_repo is not None:
        return Path(given or spec_repo).expanduser().absolute()  # type: ignore[arg-type]
    here = Path.cwd().absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    raise fail(
        f"{here} is not inside a git repository: give --repo PATH or `repository` in the spec"
    )


def make_job(spec_file: Path, repo: Path | None, job_dir: Path | None) -> Job:
    """Plan `spec_file` with the planner model into a new job directory; the job."""
    from bashgym.contracts import Charged
    from bashgym.engine import open_scrubbing
    from bashgym_orchestrator.plan import redacted
    from bashgym_orchestrator.planning import Spend, make_plan, planner_model
    from bashgym_orchestrator.worktrees import GitError, Repository, in_words

    try:
        spec = load_spec(spec_file)
        spec.repository = _repository(repo, spec.repository)
        repository = Repository(spec.repository)  # a clear error now, not after planning
        host = current_host()
        settings = load_settings(host.registry.settings_tables)
        if job_dir is not None:
            job_dir.mkdir(parents=True, exist_ok=True)
            if any(job_dir.iterdir()):
                raise InputError(f"{job_dir} is not empty: give a new folder to --job")
            job = Job(job_dir.absolute())
        else:
            job = Job.new(settings.runs_dir, spec)
        err.print(f"planning {escape(spec.title)!r} with the planner model ...", highlight=False)
        started = time.monotonic()
        spend = Spend()
        scrubbing = open_scrubbing(settings, host)  # before the model: no planning wasted
        with open_models(settings, host.registry, host.hook) as models:
            model = Charged(planner_model(models), spend.charge)
            plan = asyncio.run(make_plan(spec, spec.repository, model, cap_usd=spec.budget_usd))
        spend.duration_s = round(time.monotonic() - started, 3)
    except (InputError, SettingsError) as exc:
        raise fail(str(exc)) from None
    if scrubbing.enabled and (clean := redacted(plan, scrubbing.text)) != plan:
        plan = clean
        err.print(
            "the planner's answer held a secret: it is redacted in plan.json, and the workers "
            "get the prompts as plan.json has them",
            highlight=False,
        )
    try:
        job.set_name(asyncio.run(repository.unused_job_name(job.dir.name)))
    except GitError as exc:  # the repository's refs cannot be read (a broken packed-refs)
        raise fail(in_words(exc), code=1) from None
    job.save_spec(spec)
    job.save_plan(plan)
    job.save_planning(spend)
    tokens = spend.usage.input_tokens + spend.usage.output_tokens
    cost = "price unknown" if spend.cost_usd is None else f"${spend.cost_usd:.4f}"
    err.print(
        f"planned in {spend.duration_s:.1f}s by {plan.planner}: {spend.requests} request(s), "
        f"{tokens:,} tokens, {cost} (charged to the job)",
        highlight=False,
    )
    return job


def _show(job: Job) -> None:
    from bashgym_orchestrator.show import show

    show(job.plan(), cap_usd=job.spec().budget_usd)


@orchestrate.command("plan", help=PLAN_HELP)
def plan_command(
    spec: Annotated[Path, typer.Argument(metavar="SPEC", help=SPEC_HELP)],
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            help="The git repository (default: the spec's, else "
            "the one around the current folder).",
        ),
    ] = None,
    job_dir: Annotated[
        Path | None,
        typer.Option(
            "--job",
            help="Job directory to make (default: a new one in runs_dir, named for the spec).",
        ),
    ] = None,
) -> None:
    """`orchestrate plan` (its help: PLAN_HELP): a new job with its plan, shown."""
    job = make_job(spec, repo, job_dir)
    _show(job)
    out.print(f"job: {job.dir}", highlight=False)
    out.print(f"next: bashgym orchestrate approve {job.dir}", highlight=False)


@orchestrate.command("approve")
def approve_command(job_dir: JobArg) -> None:
    """Approve JOB's plan (checked again first): `orchestrate run JOB` may then start it."""
    job = _job(job_dir)
    try:
        plan = job.plan()
    except (PlanError, InputError) as exc:
        raise fail(str(exc)) from None
    plan.approved = True
    job.save_plan(plan)
    out.print(f"approved {len(plan.tasks)} tasks of {job.dir}", highlight=False)
    out.print(f"next: bashgym orchestrate run {job.dir}", highlight=False)


@orchestrate.command("run", help=RUN_HELP)
def run_command(
    target: Annotated[
        Path,
        typer.Argument(
            metavar="TARGET", help="JOB, a job directory, or SPEC, a spec file to plan first."
        ),
    ],
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Tasks run at once (default: the spec's, else \\[orchestrator] workers, 3).",
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget", min=0.0, help="The job's cost cap in USD (default: the spec's budget_usd)."
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            "-x",
            help="Executor of every task (default: \\[orchestrator] executor, claude-cli).",
        ),
    ] = None,
    environment: Annotated[
        str | None,
        typer.Option(
            "--environment",
            "-e",
            help="Where tasks run (default: bubblewrap where usable, else local).",
        ),
    ] = None,
    router: Annotated[
        str | None, typer.Option("--router", help="A router picks each task's executor.")
    ] = None,
    sinks: Annotated[
        list[str] | None,
        typer.Option(
            "--sink", "-k", help="Sink of the worker traces (repeatable; default: nemo-jsonl)."
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve the plan and run.")] = False,
    resolve_conflicts: Annotated[
        bool,
        typer.Option(
            "--resolve-conflicts",
            help="A worker resolves each merge conflict "
            "on the integration worktree (else it is kept and reported).",
        ),
    ] = False,
    retries: Annotated[
        int | None, typer.Option("--retries", min=0, help="Retries of a failed task (default 2).")
    ] = None,
    task_timeout: Annotated[
        float | None, typer.Option("--task-timeout", min=1.0, help="Deadline of each attempt, s.")
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="Where each task's worker runs (default: \\[orchestrator] backend, else this "
            "process), e.g. --backend ray (a local Ray instance) --set backend.address=auto (a "
            "cluster). Worktrees, commits, checks and merges stay here: every node must see the "
            "job's folders at the same paths (a shared filesystem).",
        ),
    ] = None,
    repo: Annotated[
        Path | None, typer.Option("--repo", help="With a SPEC: the repository.")
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="source.KEY=VALUE (an example above), or backend.KEY=VALUE with --backend "
            "(repeatable).",
        ),
    ] = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(
            "--plugin", help="Load a plugin for this run (a .py file, a module or a distribution)."
        ),
    ] = None,
) -> None:
    """`orchestrate run` (its help: RUN_HELP): plan a spec if given one, then run the job."""
    if target.is_file():
        job = make_job(target, repo, None)
        _show(job)
        out.print(f"job: {job.dir}", highlight=False)
        if not yes:
            out.print(
                f"not approved: run `bashgym orchestrate approve {job.dir}` then "
                f"`bashgym orchestrate run {job.dir}`, or add --yes",
                highlight=False,
            )
            return
    else:
        job = _job(target)
    if (job.dir / "run.toml").is_file():
        raise fail(
            f"{job.dir} has run before: `bashgym orchestrate resume {job.dir}` finishes "
            "it, `status` says where it stands"
        )
    try:
        plan = job.plan()
    except (PlanError, InputError) as exc:
        raise fail(str(exc)) from None
    if yes and not plan.approved:
        plan.approved = True
        job.save_plan(plan)
    if not plan.approved:
        raise fail(f"the plan is not approved: `bashgym orchestrate approve {job.dir}`, or --yes")
    options: dict[str, Any] = {"job": str(job.dir), "execute": True}
    for key, value in (
        ("workers", workers),
        ("budget_usd", budget),
        ("executor", executor),
        ("environment", environment),
        ("router", router),
        ("retries", retries),
        ("task_timeout_s", task_timeout),
    ):
        if value is not None:
            options[key] = value
    if resolve_conflicts:
        options["resolve_conflicts"] = True
    extra = [str(Path(p).absolute()) if p.endswith(".py") else p for p in plugin or []]
    backend = backend or _configured_backend()
    spec = RunSpec(
        source=StepSpec(plugin="orchestrator", options=options),
        sinks=[StepSpec(plugin=s) for s in sinks or ["nemo-jsonl"]],
        out=job.dir,
        plugins=extra,
        backend=StepSpec(plugin=backend) if backend else None,
    )
    _execute(lambda: spec, sets, job)


def _configured_backend() -> str | None:
    """`[orchestrator] backend` (bashgym.toml or BASHGYM_ORCHESTRATOR__BACKEND), or None."""
    from bashgym_orchestrator.options import OrchestratorSettings

    try:
        settings = load_settings(current_host().registry.settings_tables)
    except SettingsError as exc:
        raise fail(str(exc)) from None
    return settings.table(OrchestratorSettings).backend


@orchestrate.command("resume")
def resume_command(job_dir: JobArg) -> None:
    """Finish JOB after a crash, a kill -9, Ctrl-C or `cancel`: tasks that ended stay ended,
    those in flight run again, each task ends exactly once."""
    from bashgym_cli.runs import load_run_file

    job = _job(job_dir)
    if not (job.dir / "run.toml").is_file():
        raise fail(f"{job.dir} has not run yet: `bashgym orchestrate run {job.dir}`")
    if read_status(job.dir).get("status") in ("ok", "empty"):
        raise fail(f"{job.dir} has finished; `bashgym orchestrate status {job.dir}` shows it")
    try:
        spec = load_run_file(job.dir / "run.toml")
    except ValueError as exc:
        raise fail(str(exc)) from None
    _execute(lambda: spec, None, job)


RETRY_HELP = (
    "Run TASK of JOB again, with a fresh attempt budget (--retries as the job ran with)."
    "\n\nTASK ended failed, or blocked by a failed task (then that task is the one retried). "
    "The tasks it blocked are unblocked; merged tasks stay merged; the job merges and "
    "verifies again."
    "\n\nFix the cause first: the task's `check` or prompt in JOB/plan.json, or `check` in "
    "JOB/spec.json. The failed attempt's branch is kept as `bashgym/<job>/<task>-attempt-<n>`."
    "\n\nA running job is refused (exit 1): `orchestrate cancel JOB` first, or wait. A retry "
    "is never queued: only the job's own process changes its run store."
    "\n\nExit 0 when the job ran to the end and a task merged, 1 when the task cannot be "
    "retried, the job failed or no task merged, 130 when interrupted (`orchestrate resume JOB` "
    "goes on), 2 for a mistake here."
)


@orchestrate.command("retry", help=RETRY_HELP)
def retry_command(
    job_dir: JobArg,
    task_id: Annotated[str, typer.Argument(metavar="TASK", help="The id of the task to retry.")],
) -> None:
    """Reopen TASK in the run store and resume the job (RETRY_HELP; `retry` module)."""
    from bashgym_cli.runs import load_run_file

    from bashgym.resume import input_hash
    from bashgym_orchestrator.retry import RetryRefused, retry

    job = _job(job_dir)
    try:
        plan = job.plan()
    except (PlanError, InputError) as exc:
        raise fail(str(exc)) from None
    if task_id not in {t.id for t in plan.tasks}:
        known = ", ".join(t.id for t in plan.tasks)
        raise fail(f"{job.dir} has no task {task_id!r} (tasks: {known})")
    if not (job.dir / "run.toml").is_file():
        raise fail(f"{job.dir} has not run yet: `bashgym orchestrate run {job.dir}`", code=1)
    try:
        spec = load_run_file(job.dir / "run.toml")
    except ValueError as exc:
        raise fail(str(exc)) from None

    def reopen(resolved: Any) -> None:
        try:
            reopened = retry(job, task_id, input_hash(resolved))
        except RetryRefused as exc:
            raise fail(str(exc), code=1) from None
        err.print(f"retrying {', '.join(reopened)} of {job.dir}", highlight=False)

    _execute(lambda: spec, None, job, prepare=reopen)


def _execute(build: Any, sets: list[str] | None, job: Job, prepare: Any = None) -> None:
    """The run through the same path as `bashgym run`: every plugin loaded (executors and
    environments are options of the source here, not roles the index would load), the live
    table in place of the generic progress bars on a terminal. `prepare(resolved)` runs once
    the run is resolved, before it starts (`retry` reopens the job there)."""
    from bashgym_cli.runs import resolve_spec

    from bashgym.engine import RunInterrupted, execute
    from bashgym_orchestrator.live import JobDisplay

    previous = use_host(None)
    host = previous or current_host()
    use_host(host)
    display = JobDisplay(err)
    if display.live and "observers-progress" in host.infos:
        host.remove("observers-progress")
    host.add(display, "orchestrator-display")
    try:
        host, settings, resolved = resolve_spec(build, sets=sets)
        try:
            if prepare is not None:
                prepare(resolved)
            display.earlier = _ended_attempts(job)
            summary = execute(resolved, host, settings)
        except InputError as exc:
            raise fail(str(exc)) from None
        except RunStopped as exc:
            raise fail(str(exc), code=1) from None
        except RunInterrupted as exc:
            err.print(
                f"[yellow]stopped[/] ({escape(exc.why)}){_stopped_counts(job)}; `bashgym "
                f"orchestrate resume {job.dir}` finishes the job",
                highlight=False,
            )
            for line in stopped_worktrees_lines(job):
                err.print(line, highlight=False, soft_wrap=True)  # a path whole
            raise typer.Exit(130) from None
    finally:
        display.close()
        if "orchestrator-display" in host.infos:
            host.remove("orchestrator-display")
    _print_result(job, summary)


def _ended_attempts(job: Job) -> dict[str, int]:
    """Each task's attempts that ended before this run ({} for a job that never ran): the
    live lines number the next one after them, as job.json and `status` do."""
    from bashgym.store import RunStore
    from bashgym_orchestrator.status import attempt_counts

    if not (job.dir / "state.db").is_file():
        return {}
    try:
        store = RunStore(job.dir / "state.db")
    except sqlite3.Error:
        return {}
    try:
        return attempt_counts(store, running=False)
    except sqlite3.Error:
        return {}
    finally:
        store.close()


def _stopped_counts(job: Job) -> str:
    """`: 1 failed, 1 merged, 3 pending` for a job that stopped, as `orchestrate status` counts
    (pending: the tasks that never started and those stopped mid-run, which `resume` runs);
    nothing when the job dir cannot say (the line must still be said)."""
    from bashgym_orchestrator.status import job_status

    try:
        counts = job_status(job)["counts"]
    except (PlanError, InputError, OSError, ValueError, sqlite3.Error):
        return ""
    return ": " + counts_text(counts)


def counts_text(counts: dict[str, int]) -> str:
    """`1 failed, 1 merged, 3 pending`: a job's task counts, by state name."""
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))


def _print_result(job: Job, summary: dict[str, Any]) -> None:
    from bashgym_orchestrator.status import reason_text

    result = job.result() or {}
    counts = result.get("counts", {})
    said = counts_text(counts) or "no tasks"
    failed = result.get("status") == "failed"  # no task merged (dispatch.JobRunner._ending)
    word = "[red]failed[/] (no task merged)" if failed else "[green]done[/]"
    out.print(f"{word} {job.dir}: {said}", highlight=False)
    verify = result.get("verify")
    if verify is not None:
        word = "[green]passed[/]" if verify["ok"] else f"[red]failed[/] ({verify['reason']})"
        out.print(f"  verify `{escape(verify['command'])}`: {word}", highlight=False)
    for tid, task in result.get("tasks", {}).items():
        if task.get("state") == "conflicted":
            out.print(
                f"  [yellow]conflict[/] {tid}: {', '.join(task.get('conflicts', []))} "
                f"(branch {task.get('branch')} kept)",
                highlight=False,
            )
        elif task.get("state") in ("failed", "blocked"):
            why = reason_text(task["state"], task.get("reason")) or "no reason recorded"
            out.print(f"  [red]{task['state']}[/] {tid}: {escape(why)}", highlight=False)
    wall, path = result.get("wall_s"), result.get("critical_path_s")
    if wall is not None:
        runs = read_status(job.dir).get("attempt")  # wall_s and the path count every run
        over = f" over {runs} runs" if isinstance(runs, int) and runs > 1 else ""
        out.print(
            f"  integration branch: {result.get('integration_branch')}; cost "
            f"{cost_text(result)}; wall {wall:.1f}s{over} against "
            f"{path:.1f}s on the critical path",
            highlight=False,
        )
    kept = [job.worktrees / n for n in result.get("kept_worktrees") or []]
    kept = [p for p in kept if p.is_dir()]
    for line in kept_worktrees_lines(job, kept, "kept for a look", "remove them when done"):
        out.print(line, highlight=False, soft_wrap=True)  # a path whole
    for name, paths in summary.get("outputs", {}).items():
        for p in paths:
            out.print(f"  {name}: {p}", highlight=False)
    if failed:
        raise typer.Exit(1)


def kept_worktrees_lines(
    job: Job, paths: list[Path], why: str, drop: str, force: bool = False
) -> list[str]:
    """The lines that name the job's worktrees left registered in the user's repository and
    the commands that remove them (`drop` says when); none when there are none. `force`: a
    stopped task's worktree may hold its uncommitted work, which plain `remove` refuses."""
    if not paths:
        return []
    try:
        repo = job.spec().repository
    except InputError:
        repo = None
    git = f"git -C {shlex.quote(str(repo))}" if repo else "git"
    flag = " --force" if force else ""
    commands = " && ".join(f"{git} worktree remove{flag} {shlex.quote(str(p))}" for p in paths)
    return [
        f"  worktrees {why}: {escape(', '.join(str(p) for p in paths))}",
        f"  {drop}: {escape(commands)}",
    ]


def stopped_worktrees_lines(job: Job) -> list[str]:
    """A stopped job's worktrees (what `resume` goes on with), named with the commands that
    drop them for a job given up."""
    found = sorted(p for p in job.worktrees.glob("*") if (p / ".git").exists())
    return kept_worktrees_lines(
        job, found, "kept for `orchestrate resume`", "to give the job up instead", force=True
    )


def cost_text(result: dict[str, Any]) -> str:
    """A job's cost as job.json has it: `$X`, or `unknown (no price for M)` where a model
    without a price was used (`orchestrate plan` says "price unknown" the same way)."""
    cost = result.get("cost_usd")
    if cost is None:
        models = ", ".join(result.get("cost_unknown_for") or []) or "a model"
        return f"unknown (no price for {escape(models)})"
    return f"${cost:.4f}"


@orchestrate.command("status")
def status_command(
    job_dir: JobArg,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Where JOB stands: each task's state, attempts, executor, branch, merge; works from
    another terminal while the job runs."""
    from bashgym_orchestrator.status import job_status

    job = _job(job_dir)
    try:
        status = job_status(job)
    except (PlanError, InputError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(status, indent=2, default=str))
        return
    from bashgym_orchestrator.live import status_table

    out.print(status_table(status))


@orchestrate.command("cancel")
def cancel_command(
    job_dir: JobArg,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0.0, help="Seconds to wait for it to stop (0: do not wait)."),
    ] = 60.0,
) -> None:
    """Stop JOB, running in another process: its workers are stopped, the tasks in flight go
    back to pending, and `orchestrate resume JOB` goes on later."""
    from bashgym_orchestrator.status import alive

    job = _job(job_dir)
    run = read_status(job.dir)
    if run.get("status") != "running" or not alive(run.get("pid")):
        raise fail(f"{job.dir} is not running", code=1)
    job.cancel_file.write_text(f"cancel requested by pid {os.getpid()}\n")
    out.print(f"cancel requested for {job.dir} (pid {run['pid']})", highlight=False)
    deadline = time.monotonic() + wait
    while wait and time.monotonic() < deadline:
        if read_status(job.dir).get("status") != "running" or not alive(run.get("pid")):
            out.print(f"stopped; `bashgym orchestrate resume {job.dir}` goes on", highlight=False)
            for line in stopped_worktrees_lines(job):
                out.print(line, highlight=False, soft_wrap=True)
            return
        time.sleep(0.2)
    if wait:
        raise fail(f"{job.dir} has not stopped after {wait:g}s", code=1)
