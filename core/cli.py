"""The `bashgym` command line (Typer). Plugins add sub-commands through `register_commands`.

Every configuration problem (unknown plugin name, bad option, bad run or settings file) is caught
before any work and printed as one line naming the problem and the valid choices, exit code 2.
"""

from __future__ import annotations

import functools
import signal
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from bashgym import __version__
from bashgym.contracts import KINDS, InputError
from bashgym.plugins import PluginHost, PluginLoadError
from bashgym.registry import PluginConflictError
from bashgym.runspec import (
    RunConfigError,
    RunSpec,
    StepSpec,
    apply_sets,
    load_run_file,
    resolve,
)
from bashgym.settings import SettingsError, load_settings

err = Console(stderr=True)
out = Console()

_host: PluginHost | None = None


TERMINAL_NOTES = 5  # notes printed at a run's end; run.json keeps them all


def current_host() -> PluginHost:
    """The process's plugin host, loaded on first use (tests swap it with `use_host`)."""
    global _host
    if _host is None:
        _host = PluginHost()
    return _host


def use_host(host: PluginHost | None) -> PluginHost | None:
    """Install `host` as the current one; returns the previous (for fixtures to restore)."""
    global _host
    previous, _host = _host, host
    return previous


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _report_broken_plugins(host: PluginHost) -> None:
    for info in host.failures():
        err.print(
            f"[yellow]warning:[/] plugin {info.name!r} is disabled: {info.error}", highlight=False
        )


def run_command(
    run_file: Annotated[
        Path | None, typer.Argument(help="A run file (TOML). Flags below add to or override it.")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", "-s", help="Source name.")] = None,
    executor: Annotated[
        str | None,
        typer.Option("--executor", "-x", help="Executor name: run each source row as a task."),
    ] = None,
    environment: Annotated[
        str | None,
        typer.Option(
            "--environment", "-e", help="Where tasks run (default: bubblewrap, else local)."
        ),
    ] = None,
    pipeline: Annotated[str | None, typer.Option("--pipeline", "-p", help="Pipeline name.")] = None,
    sink: Annotated[
        list[str] | None, typer.Option("--sink", "-k", help="Sink name (repeatable).")
    ] = None,
    judge: Annotated[
        list[str] | None, typer.Option("--judge", "-j", help="Judge name (repeatable).")
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
        int | None, typer.Option("--concurrency", "-c", min=1, help="Tasks run at once.")
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="ROLE.KEY=VALUE option, e.g. source.path=data/ (repeatable)."),
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
        int | None, typer.Option("--seed", help="Seed for sampling and splits.")
    ] = None,
    top_up: Annotated[
        bool | None,
        typer.Option(
            "--top-up/--no-top-up",
            help="Keep generating in rounds until N rows pass the filters and judges.",
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
    """Run source → executor → pipeline → judges → sinks into a run directory (each optional).

    The run directory holds run.json (counts, usage, cost), events.jsonl, the sinks' files and
    report.html. Exit 0 when rows were written, 3 when the run kept none (run.json says why),
    2 for a mistake in the command, 1 when the run failed.

    [bold]Examples[/]

      bashgym run -s files --set source.path=examples/tasks.csv -p samplers -k parquet

      bashgym run -s prompts --set source.path=tasks.txt -x student -k nemo-jsonl

      bashgym run examples/slice.toml -n 20 --set sink.shard_rows=5

      bashgym run --plugin my_pipeline.py --pipeline mine --sink parquet

    List names with [bold]bashgym plugins[/] and options with [bold]bashgym options ROLE NAME[/].
    """
    try:
        settings = load_settings()
        spec = load_run_file(run_file) if run_file else RunSpec()
        update: dict[str, Any] = {}
        if source:
            update["source"] = StepSpec(plugin=source)
        for role, name in (
            ("executor", executor),
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
            ("concurrency", concurrency),
            ("seed", seed),
            ("top_up", top_up),
            ("fresh", fresh),
        ):
            if value is not None:
                update[key] = value
        if plugin:
            update["plugins"] = [*spec.plugins, *plugin]
        spec = apply_sets(
            RunSpec.model_validate({**spec.model_dump(), **update}),
            [*(f"source.map.{m}" for m in maps or []), *(sets or [])],
        )
        host = current_host()
        for extra in spec.plugins:
            host.load(extra)
        resolved = resolve(spec, host.registry)
    except (RunConfigError, SettingsError, PluginLoadError, PluginConflictError) as exc:
        raise fail(str(exc)) from None
    _report_broken_plugins(host)
    from bashgym.engine import EXIT_EMPTY, RunInterrupted, execute

    try:
        summary = execute(resolved, host, settings, console=err)
    except InputError as exc:
        raise fail(str(exc)) from None
    except RunInterrupted as exc:
        err.print(
            f"[yellow]interrupted[/] ({exc.why}): {exc.run_dir} keeps its finished work; run "
            "the same command again to resume it (--fresh starts over)",
            highlight=False,
        )
        raise typer.Exit(130) from None
    counts = summary["counts"]
    dropped = ", ".join(f"{n} {r}" for r, n in counts["dropped"].items()) or "none"
    kept = "an unknown number of" if counts["kept"] is None else counts["kept"]
    empty = summary["status"] == "empty"
    out.print(
        f"{'[yellow]no rows kept[/]' if empty else '[green]done[/]'} {summary['run_dir']}: "
        f"{counts.get('generated', 0)} generated, {kept} kept, dropped: {dropped}",
        highlight=False,
    )
    for name, paths in summary["outputs"].items():
        for p in paths:
            out.print(f"  {name}: {p}", highlight=False)
    for name, path in summary.get("artifacts", {}).items():
        out.print(f"  {name}: {path}", highlight=False)
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


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"bashgym {__version__}")
        raise typer.Exit()


def build_app(host: PluginHost | None = None) -> typer.Typer:
    """A fresh CLI app with the core commands plus every plugin's `register_commands`."""
    app = typer.Typer(
        name="bashgym",
        no_args_is_help=True,
        rich_markup_mode="rich",
        help="Turn coding-agent work into training data, and run that work.\n\n"
        "Sources read inputs, pipelines generate rows on NeMo DataDesigner, judges keep or drop "
        "them, sinks write training files. Every part is a plugin: see [bold]bashgym plugins[/].",
    )

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option(
                "--version", callback=version_callback, is_eager=True, help="Print the version."
            ),
        ] = False,
    ) -> None:
        pass

    app.command("run")(run_command)
    _add_plugin_commands(app, host or current_host())
    return app


def _add_plugin_commands(app: typer.Typer, host: PluginHost) -> None:
    """Each plugin's commands, built on a scratch app first: a name already taken (a built-in,
    or another plugin's) is refused by name, and a broken hook disables only its plugin."""
    for impl in host.pm.hook.register_commands.get_hookimpls():
        scratch = typer.Typer()
        info = host.infos.get(impl.plugin_name)
        try:
            impl.function(app=scratch)
        except Exception as exc:  # noqa: BLE001 -- a broken plugin command never breaks the CLI
            if info is not None:
                info.error = f"register_commands failed: {exc}"
            continue
        taken, added, clashes = _command_names(app), [], []
        for item in [*scratch.registered_commands, *scratch.registered_groups]:
            name = _name(item)
            if name in taken:
                clashes.append(name)
                continue
            is_group = item in scratch.registered_groups
            _input_errors_exit_2(item)
            (app.registered_groups if is_group else app.registered_commands).append(item)  # type: ignore[arg-type]
            added.append(name)
        if info is not None:
            info.registers["commands"] = sorted(added)
            if clashes:
                info.error = (
                    f"command(s) {', '.join(repr(c) for c in clashes)} refused: the name is "
                    "already taken by a built-in or another plugin"
                )


def _input_errors_exit_2(item: Any) -> None:
    """A plugin command (or each command of a group) ends an `InputError` the way `run` does:
    one red line and exit 2, not a traceback. functools.wraps keeps the signature Typer reads."""
    group = getattr(item, "typer_instance", None)
    if group is not None:
        for sub in [*group.registered_commands, *group.registered_groups]:
            _input_errors_exit_2(sub)
        return
    callback = item.callback
    if callback is None or getattr(callback, "_bashgym_wrapped", False):
        return

    @functools.wraps(callback)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None

    guarded._bashgym_wrapped = True  # type: ignore[attr-defined]
    item.callback = guarded


def _name(item: Any) -> str:
    if getattr(item, "typer_instance", None) is not None:  # a group
        return item.name or ""
    return item.name or (item.callback.__name__.replace("_", "-") if item.callback else "")


def _command_names(app: typer.Typer) -> set[str]:
    return {_name(c) for c in [*app.registered_commands, *app.registered_groups]}


def main() -> None:
    # SIGTERM and SIGHUP end a run like Ctrl-C: its status is recorded, its servers stopped.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    build_app()()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


__all__ = ["KINDS", "build_app", "current_host", "main", "use_host"]
