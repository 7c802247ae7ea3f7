"""`bashgym run`: flags and a run file become a RunSpec, the kernel's `execute` does the run,
and the end of it is said on the terminal (what was written, the first notes, why nothing was
kept). A front end like any other: a web UI or a scheduler would call `execute` the same way."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import err, fail, out
from bashgym_cli.oserrors import os_problem
from bashgym_cli.runs import load_run_file, resolve_spec
from rich.markup import escape

from bashgym.contracts import InputError, RunStopped
from bashgym.runspec import (
    ResolvedRun,
    RunSpec,
    StepSpec,
)
from bashgym_commands_run.completion import complete_sets, names_of

TERMINAL_NOTES = 5  # notes printed at a run's end; run.json keeps them all

# Wrapped here as any help: bashgym_cli reflows each paragraph to the terminal's width and keeps
# the indented examples as written (short enough never to wrap at 80 columns).
RUN_HELP = """\
Run source → executor → pipeline → judges → sinks into a run directory (each optional).

The run directory holds run.json (counts, usage, cost), events.jsonl, the sinks' files and
report.html. Exit 0 when rows were written, 3 when the run kept none (run.json says why), 2 for
a mistake in the command, 1 when the run failed (the same command resumes it), 130 when it was
interrupted (Ctrl-C, SIGTERM or SIGHUP: the run directory keeps its finished work and the same
command resumes it).

[bold]Examples[/]

  bashgym run examples/slice.toml -n 20 --set sink.shard_rows=5
  bashgym run -s files --set source.path=tasks.csv -p samplers -k parquet
  bashgym run -s prompts --set source.path=tasks.txt -x student -k nemo-jsonl
  bashgym run -s prompts --set source.path=tasks.txt -x student -k parquet \\
      --backend ray --set backend.address=auto
  bashgym run -s files --set source.path=tasks.csv -k nemo-jsonl \\
      --router confidence --set router.student=student \\
      --set router.teacher=claude-cli
  bashgym run --plugin my_pipeline.py --pipeline mine --sink parquet

List names with [bold]bashgym plugins[/] and options with [bold]bashgym options ROLE NAME[/]."""


def run_command(
    run_file: Annotated[
        Path | None,
        typer.Argument(
            metavar="RUN_FILE",  # upper case, as ROLE, NAME, RUN_DIR in the help's prose
            help="A run file (TOML). Flags below add to or override it.",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", "-s", help="Source name.", autocompletion=names_of("sources")),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            "-x",
            help="Executor name: run each source row as a task. With --router: which of its "
            "executors gets the --set executor.KEY=VALUE options.",
            autocompletion=names_of("executors"),
        ),
    ] = None,
    router: Annotated[
        str | None,
        typer.Option(
            "--router",
            help="Router name: picks an executor per task and says why; its executors are its "
            "options, e.g. --set router.teacher=NAME (see the examples). -x may name one of "
            "them to give it --set executor.* options (the others run with their defaults).",
            autocompletion=names_of("routers"),
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="Where the run's agent tasks and generation rounds run (default: this process), "
            "e.g. --backend ray (a local Ray instance) --set backend.address=auto (the cluster "
            "`ray start` joined this machine to).",
            autocompletion=names_of("backends"),
        ),
    ] = None,
    environment: Annotated[
        str | None,
        typer.Option(
            "--environment",
            "-e",
            help="Where the executor's tasks run (default: bubblewrap, else local).",
            autocompletion=names_of("environments"),
        ),
    ] = None,
    pipeline: Annotated[
        str | None,
        typer.Option(
            "--pipeline", "-p", help="Pipeline name.", autocompletion=names_of("pipelines")
        ),
    ] = None,
    sink: Annotated[
        list[str] | None,
        typer.Option(
            "--sink", "-k", help="Sink name (repeatable).", autocompletion=names_of("sinks")
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge", "-j", help="Judge name (repeatable).", autocompletion=names_of("judges")
        ),
    ] = None,
    num_records: Annotated[
        int | None,
        typer.Option(
            "-n",
            "--num-records",
            min=1,
            help="Records to generate: pipeline.num_records, or a cap on source rows.",
        ),
    ] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory.")] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "-c",
            min=1,
            help="Tasks run at once (default: \\[tasks] concurrency, 4).",
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="ROLE.KEY=VALUE option, e.g. source.path=data/ (repeatable).",
            autocompletion=complete_sets,
        ),
    ] = None,
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="Rename a source column: NEW=OLD, e.g. --map prompt=question (repeatable); "
            "same as --set source.map.NEW=OLD.",
        ),
    ] = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(
            "--plugin",
            help="Load a plugin for this run: a .py file, a module or a distribution (repeatable).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed for sampling and splits (default: 0)."),
    ] = None,
    top_up: Annotated[
        bool | None,
        typer.Option(
            "--top-up/--no-top-up",
            help="Keep generating in rounds (at most max_rounds, 5) until N rows pass the "
            "filters and judges (default: off).",
        ),
    ] = None,
    fresh: Annotated[
        bool | None,
        typer.Option(
            "--fresh",
            help="Start over instead of resuming an unfinished run of the same config.",
        ),
    ] = None,
) -> None:
    """`bashgym run` (its help: RUN_HELP): build the RunSpec, execute it, say how it ended."""

    from_file = RunSpec()  # the run file's own settings: an idle one is named as the file's

    def build() -> RunSpec:
        nonlocal from_file
        spec = from_file = load_run_file(run_file) if run_file else RunSpec()
        update: dict[str, Any] = {}
        if source:
            update["source"] = StepSpec(plugin=source)
        for role, name in (
            ("executor", executor),
            ("router", router),
            ("backend", backend),
            ("environment", environment),
            ("pipeline", pipeline),
        ):
            if name:
                update[role] = StepSpec(plugin=name)
        if sink:
            update["sinks"] = [StepSpec(plugin=s) for s in sink]
        if judge:
            update["judges"] = [StepSpec(plugin=j) for j in judge]
        for key, value in (
            ("num_records", num_records),
            ("out", out_dir),
            ("seed", seed),
            ("top_up", top_up),
            ("fresh", fresh),
        ):
            if value is not None:
                update[key] = value
        if plugin:
            update["plugins"] = [*spec.plugins, *plugin]
        if concurrency is not None:  # the work-tasks plugin's [tasks] table
            tables = {**spec.tables, "tasks": {**spec.tables.get("tasks", {})}}
            tables["tasks"]["concurrency"] = concurrency
            update["tables"] = tables
        return RunSpec.model_validate({**spec.model_dump(), **update})

    host, settings, resolved = resolve_spec(build, sets=sets, maps=maps)
    from bashgym.engine import RunInterrupted, execute  # here: every CLI start imports this file

    flags = {
        "top_up": "--top-up" if top_up else None,
        "environment": f"-e {environment}" if environment else None,
        "concurrency": None if concurrency is None else f"-c {concurrency}",
        "backend": f"--backend {backend}" if backend else None,
    }
    if idle := idle_setting(resolved, Origins(flags, from_file, run_file)):
        raise fail(idle)
    try:
        summary = execute(resolved, host, settings)
    except InputError as exc:
        raise fail(str(exc)) from None
    except RunStopped as exc:  # a cause outside the command (its model stopped): resumable
        raise fail(str(exc), code=1) from None
    except OSError as exc:  # a path the run could not write (a sink's): one line, run.json has it
        raise fail(unwritable(exc), code=2 if exc.errno in PATH_MISTAKES else 1) from None
    except RunInterrupted as exc:
        err.print(
            f"[yellow]interrupted[/] ({escape(str(exc.why))}): {escape(str(exc.run_dir))} keeps "
            "its finished work; run the same command again to resume it (--fresh starts over)",
            highlight=False,
            soft_wrap=True,  # one line when piped or logged, like the progress lines before it
        )
        raise typer.Exit(130) from None
    print_summary(summary)


@dataclass(frozen=True)
class Origins:
    """Where a setting of the run came from, to name it in an error as the user wrote it: a
    flag (`flags`, by setting: its text as typed, None when not given), else the run file, else
    `--set`."""

    flags: dict[str, str | None]
    from_file: RunSpec
    run_file: Path | None

    def name(self, key: str, setting: str, in_file: bool, dotted: str | None = None) -> str:
        """`setting` (as a run file writes it) named by its origin; `dotted`: its --set."""
        if flag := self.flags.get(key):
            return flag
        if in_file and self.run_file is not None:
            return f"{setting} in {self.run_file}"
        return f"--set {dotted or key + '.*'}"


def idle_setting(resolved: ResolvedRun, origins: Origins) -> str | None:
    """Why a setting of the run would do nothing in it, as the one-line error; None when each
    acts. A flag accepted and ignored (`--top-up` on a run that generates nothing) let a user
    believe it acted; `--set pipeline.num_records=3` without a pipeline was already refused.

    What each needs, read from the code that uses it: top_up is read only by the rounds of a
    runner (a pipeline, or a judge that adds columns: `pipeline_runner`); the environment and
    `[tasks] concurrency` only by the executor's tasks (a router's run has an executor too); a
    backend runs only tasks and generation rounds; so do `[tasks]`' keys and `[workspace]`
    (read only by bashgym-work-tasks, for an executor's tasks). bashgym.toml's [tasks] and
    [workspace] are a user's defaults for every run, not this run's settings: they are not in
    `resolved.spec.tables`."""
    from bashgym.engine import pipeline_runner

    spec, mine = resolved.spec, origins.from_file
    tasks = resolved.executor is not None
    rounds = pipeline_runner(resolved) is not None
    run_tasks = "needs an executor (-x) or a router (--router)"
    if spec.top_up and not rounds:
        what = origins.name("top_up", "top_up = true", mine.top_up, "top_up=true")
        return (
            f"{what} needs a pipeline (-p) or a judge that adds columns (e.g. -j llm-rubric): "
            "it generates more rows in rounds, and this run generates none"
        )
    if spec.environment is not None and not tasks:
        what = origins.name("environment", "[environment]", mine.environment is not None)
        return f"{what} {run_tasks}: an environment is where their tasks run"
    if not tasks and (idle := idle_task_table(spec, origins)):
        return f"{idle[0]} {run_tasks}: {idle[1]}"
    if spec.backend is not None and not (tasks or rounds):
        what = origins.name("backend", "[backend]", mine.backend is not None)
        return (
            f"{what} needs an executor (-x), a router (--router) or a pipeline (-p): a backend "
            "runs their tasks and generation rounds, and this run has none"
        )
    return None


TASK_KEYS = {
    "concurrency": "it is how many of their tasks run at once",
    "task_timeout_s": "it is each of their tasks' deadline",
    "budget_usd": "it caps what their tasks may cost",
    "check_timeout_s": "it is the deadline of their tasks' checks",
}
"""`[tasks]`'s keys (bashgym-work-tasks' TasksSettings) and what each does; all of them act
only on the tasks of an executor, in `bashgym_work_tasks`, their one reader."""


def idle_task_table(spec: RunSpec, origins: Origins) -> tuple[str, str] | None:
    """The first `[tasks]` key or `[workspace]` this run sets itself (flag, run file or --set),
    named as given, and what it does; for a run with no executor, where it would do nothing.
    A `[workspace]` --set is named without its value: a repository URL may hold a token."""
    mine = origins.from_file.tables
    if tasks := spec.tables.get("tasks"):
        key, value = next(iter(tasks.items()))
        in_file = key in mine.get("tasks", {})
        what = origins.name(key, f"[tasks] {key}", in_file, f"tasks.{key}={value}")
        return what, TASK_KEYS.get(key, "it acts only on their tasks")
    workspace = spec.tables.get("workspace", {})
    if workspace:
        dotted = f"workspace.{next(iter(workspace))}"
        what = origins.name("workspace", "[workspace]", bool(mine.get("workspace")), dotted)
        return what, "it is where each of their tasks starts"
    return None


# a path given in the command that cannot be written (exit 2, a mistake in the command); any
# other OSError (a full disk, an I/O error) is the run failing (exit 1)
PATH_MISTAKES = {errno.ENOENT, errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.EACCES, errno.EROFS}


def unwritable(exc: OSError) -> str:
    """One line for a path the run could not write: which, why (in the words every command
    uses, `os_problem`'s), and where to look."""
    if exc.filename2 or exc.filename:
        what = f"cannot write {os_problem(exc, with_path=True)}"
    else:
        what = f"cannot write: {os_problem(exc)}"
    where = "check --out and the sinks' path options (run.json says what was written before it)"
    return f"{what}; {where}"


def kept_text(counts: dict[str, Any]) -> str:
    """`6 kept`; sinks that disagree each say theirs, in words that fit the `done` line's
    commas: `5 kept in nemo-jsonl and 6 in parquet` (was `(5 nemo-jsonl, 6 parquet) kept`)."""

    def rows(n: int | None) -> str:
        return "an unknown number" if n is None else str(n)

    by_sink: dict[str, int | None] = counts.get("kept_by_sink") or {}
    if len(set(by_sink.values())) <= 1:
        return f"{rows(counts['kept'])} kept"
    each = [f"{rows(n)} in {name}" for name, n in by_sink.items()]
    each[0] = each[0].replace(" in ", " kept in ", 1)
    return f"{', '.join(each[:-1])} and {each[-1]}"


def print_summary(summary: dict[str, Any]) -> None:
    """What the run wrote, its first notes, and exit 3 when it kept no rows."""
    from bashgym.engine import EXIT_EMPTY

    counts = summary["counts"]
    dropped = ", ".join(f"{n} {r}" for r, n in counts["dropped"].items()) or "none"
    empty = summary["status"] == "empty"
    out.print(
        f"{'[yellow]no rows kept[/]' if empty else '[green]done[/]'} "
        f"{escape(str(summary['run_dir']))}: {counts.get('generated', 0)} generated, "
        f"{escape(kept_text(counts))}, dropped: {escape(dropped)}",  # a [ in them is not markup
        highlight=False,
        soft_wrap=True,  # piped or logged, never broken at 80 columns: a path must copy whole
    )
    for name, paths in summary["outputs"].items():
        for p in paths:
            out.print(f"  {name}: {p}", highlight=False, markup=False, soft_wrap=True)
    for name, path in summary.get("artifacts", {}).items():
        out.print(f"  {name}: {path}", highlight=False, markup=False, soft_wrap=True)
    notes = summary.get("notes", [])  # what the run wants a user to know; run.json keeps all
    for note in notes[:TERMINAL_NOTES]:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    if len(notes) > TERMINAL_NOTES:
        err.print(
            f"[yellow]note:[/] {len(notes) - TERMINAL_NOTES} more in run.json", highlight=False
        )
    if empty:
        err.print(
            f"[yellow]warning:[/] {escape(summary['warning'])}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT_EMPTY)
