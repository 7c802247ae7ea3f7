"""The `bashgym` command line (Typer). Plugins add sub-commands through `register_commands`.

Every configuration problem (unknown plugin name, bad option, bad run or settings file) is caught
before any work and printed as one line naming the problem and the valid choices, exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bashgym import __version__
from bashgym.contracts import KINDS, ROLES, InputError
from bashgym.plugins import PluginHost, PluginLoadError
from bashgym.registry import PluginConflictError, UnknownNameError
from bashgym.runspec import (
    RunConfigError,
    RunSpec,
    StepSpec,
    apply_sets,
    load_run_file,
    resolve,
    toml_dumps,
)
from bashgym.settings import SettingsError, config_files, load_settings, mask_secrets

err = Console(stderr=True)
out = Console()

_host: PluginHost | None = None


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
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def _report_broken_plugins(host: PluginHost) -> None:
    for info in host.failures():
        err.print(
            f"[yellow]warning:[/] plugin {info.name!r} is disabled: {info.error}", highlight=False
        )


def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List installed plugins: distribution, version, hooks, and the names each registers."""
    host = current_host()
    registry = host.registry
    rows = [
        {
            "name": i.name,
            "distribution": i.distribution,
            "version": i.version,
            "module": i.module,
            "hooks": i.hooks,
            "registers": {k: v for k, v in i.registers.items() if v},
            **({"error": i.error} if i.error else {}),
        }
        for i in sorted(host.infos.values(), key=lambda i: i.name)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        table = Table("plugin", "distribution", "version", "registers", "hooks")
        for row in rows:
            regs = "; ".join(f"{k}: {', '.join(v)}" for k, v in row["registers"].items())
            regs = regs if "error" not in row else f"[red]failed: {row['error']}[/]"
            table.add_row(
                row["name"],
                row["distribution"] or "-",
                row["version"] or "-",
                regs,
                ", ".join(row["hooks"]),
            )
        out.print(table)
    if registry.conflicts:
        raise fail("\n".join(registry.conflicts), code=1)


def options_command(
    role: Annotated[str, typer.Argument(help=f"One of: {', '.join(ROLES)}, executor, router.")],
    name: Annotated[str, typer.Argument(help="The registered name, e.g. files.")],
) -> None:
    """Show the options a plugin accepts, with types, defaults and descriptions."""
    extra = {"executor": "executors", "router": "routers", "runtime": "runtimes"}
    kind = ROLES.get(role) or extra.get(role)
    if kind is None:
        raise fail(f"unknown role {role!r}; valid roles: {', '.join([*ROLES, *extra])}")
    try:
        registered = current_host().registry.get(kind, name)
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    model = registered.obj.Options
    out.print(
        f"[bold]{role} {name}[/] (from plugin {registered.plugin}): {registered.obj.summary()}"
    )
    table = Table("option", "type", "default", "description")
    for field_name, field in model.model_fields.items():
        default = (
            "required"
            if field.is_required()
            else repr(field.get_default(call_default_factory=True))
        )
        annotation = getattr(field.annotation, "__name__", None) or str(field.annotation)
        table.add_row(
            f"{role}.{field_name}",
            annotation.replace("typing.", ""),
            default,
            field.description or "",
        )
    out.print(table)


def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print the resolved settings (env > ./bashgym.toml > user bashgym.toml), secrets masked."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    data = mask_secrets(settings.model_dump(mode="json"))
    files = [str(p) for p in config_files() if p.is_file()]
    if as_json:
        typer.echo(json.dumps({"files": files, "settings": data}, indent=2))
        return
    out.print(
        f"# files read: {', '.join(files) or 'none (defaults and BASHGYM_* env only)'}",
        highlight=False,
    )
    out.print(toml_dumps(data), highlight=False, markup=False)


def run_command(
    run_file: Annotated[
        Path | None, typer.Argument(help="A run file (TOML). Flags below add to or override it.")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", "-s", help="Source name.")] = None,
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
    """Run source → pipeline → judges → sinks and write a run directory with run.json.

    [bold]Examples[/]

      bashgym run -s files --set source.path=examples/tasks.csv -p samplers -k parquet

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
        if pipeline:
            update["pipeline"] = StepSpec(plugin=pipeline)
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
    from bashgym.engine import execute

    try:
        summary = execute(resolved, host, settings, console=err)
    except InputError as exc:
        raise fail(str(exc)) from None
    counts = summary["counts"]
    dropped = ", ".join(f"{n} {r}" for r, n in counts["dropped"].items()) or "none"
    out.print(
        f"[green]done[/] {summary['run_dir']}: {counts.get('generated', 0)} generated, "
        f"{counts['kept']} kept, dropped: {dropped}",
        highlight=False,
    )
    for name, paths in summary["outputs"].items():
        for p in paths:
            out.print(f"  {name}: {p}", highlight=False)


def models_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List model aliases: provider, model, endpoint, and the env var holding the key."""
    if ctx.invoked_subcommand is not None:
        return
    import os

    from bashgym.models import PROVIDERS, key_env, static_endpoint

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    rows = []
    for name, alias in settings.models.items():
        env = key_env(alias)
        runtime = PROVIDERS[alias.provider].runtime
        rows.append(
            {
                "alias": name,
                "provider": alias.provider,
                "model": alias.model or (f"({runtime} default)" if runtime else None),
                "endpoint": static_endpoint(alias) or f"started by runtime {runtime!r}",
                "api_key_env": env,
                "api_key_set": bool(os.environ.get(env)) if env else None,
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("alias", "provider")
    for column in ("model", "endpoint", "key env var"):
        table.add_column(column, overflow="fold")  # never cut a URL or a variable name short
    table.add_column("key set")
    for row in rows:
        is_set = {None: "-", True: "yes", False: "[red]NO[/]"}[row["api_key_set"]]
        table.add_row(
            row["alias"],
            row["provider"],
            row["model"] or "-",
            row["endpoint"],
            row["api_key_env"] or "-",
            is_set,
        )
    out.print(table)


def models_check(
    alias: Annotated[
        str | None, typer.Argument(help="Alias to check; default: every configured alias.")
    ] = None,
) -> None:
    """Send one tiny request per alias; print latency or why it failed (exit 1 on failure)."""
    from rich.markup import escape

    from bashgym.models import ModelSession, check

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    names = [alias] if alias else list(settings.models)
    failed = False
    with ModelSession(settings, current_host().registry) as session:
        for name in names:
            result = check(session, name)
            if result.ok:
                out.print(f"[green]ok[/]    {name}: {result.latency_s:.2f}s", highlight=False)
            else:
                failed = True
                message = escape(result.error or "")
                out.print(f"[red]FAIL[/]  {name}: {message}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------
# Pipeline commands: list, preview, validate, export (the work is in bashgym.pipeline_ops).

PipelineArg = Annotated[str, typer.Argument(help="Pipeline name (see `bashgym pipeline list`).")]
SourceOpt = Annotated[
    str | None, typer.Option("--source", "-s", help="Read seed rows from this source.")
]
JudgeOpt = Annotated[
    list[str] | None, typer.Option("--judge", "-j", help="Judge name (repeatable).")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="ROLE.KEY=VALUE option, e.g. pipeline.num_records=20 (repeatable)."),
]
MapOpt = Annotated[
    list[str] | None,
    typer.Option("--map", help="Rename a source column: NEW=OLD (repeatable)."),
]
PluginOpt = Annotated[
    list[str] | None,
    typer.Option("--plugin", help="Load a plugin: a .py file, a module or a distribution."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _pipeline_spec(
    pipeline: str,
    source: str | None,
    judge: list[str] | None,
    sets: list[str] | None,
    maps: list[str] | None,
    plugin: list[str] | None,
) -> tuple[PluginHost, Any, Any]:
    """Settings, host and the resolved spec, through the same `--set`/`--plugin` path as `run`."""
    from bashgym.pipeline_ops import resolve_pipeline

    try:
        settings = load_settings()
        spec = RunSpec(
            source=StepSpec(plugin=source) if source else None,
            pipeline=StepSpec(plugin=pipeline),
            judges=[StepSpec(plugin=j) for j in judge or []],
            plugins=list(plugin or []),
        )
        spec = apply_sets(spec, [*(f"source.map.{m}" for m in maps or []), *(sets or [])])
        host = current_host()
        for extra in spec.plugins:
            host.load(extra)
        resolved = resolve_pipeline(spec, host.registry)
    except (RunConfigError, SettingsError, PluginLoadError, PluginConflictError) as exc:
        raise fail(str(exc)) from None
    _report_broken_plugins(host)
    return host, settings, resolved


def pipeline_list(as_json: JsonOpt = False) -> None:
    """List pipelines: plugin, description, output format, seed needs, and the columns each
    builds with its default options (no model is called; a pipeline that fails to build shows
    its error instead of columns).

    [bold]Examples[/]

      bashgym pipeline list

      bashgym pipeline list --json | jq '.[].columns'
    """
    from dataclasses import asdict

    from bashgym.pipeline_ops import list_pipelines

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    host = current_host()
    _report_broken_plugins(host)
    infos = list_pipelines(host, settings)
    if as_json:
        typer.echo(json.dumps([asdict(i) for i in infos], indent=2))
        return
    if not infos:
        out.print("no pipelines installed (see `bashgym plugins`)")
        return
    table = Table()
    for column in ("pipeline", "output", "seed", "description", "columns"):
        # names are folded, never cut short; the free text columns share what width is left
        ratio = 1 if column in ("description", "columns") else None
        table.add_column(column, overflow="fold", ratio=ratio)
    for info in infos:
        seed = "required" if info.needs_seed else "optional"
        if info.example_seed:
            seed += f"\nexample: {', '.join(info.seed_columns)}"
        columns = (
            f"[red]build failed: {escape(info.error)}[/]"
            if info.error
            else ", ".join(c.name for c in info.columns)
        )
        table.add_row(
            f"[bold]{info.name}[/]\n[dim]{info.plugin}[/]",
            info.output_format,
            escape(seed),
            escape(info.description),
            columns,
        )
    out.print(table)


def validate_command(
    pipeline: PipelineArg,
    source: SourceOpt = None,
    judge: JudgeOpt = None,
    sets: SetOpt = None,
    maps: MapOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a pipeline's DataDesigner config without generating anything or calling a model.

    Builds the config as [bold]bashgym run[/] would (seed from the source, else the pipeline's
    example seed; judges' columns added), compiles it with DataDesigner and checks that every
    model alias a column calls is defined and has its key. Exit 0 with "valid: N columns", or
    exit 2 with one line per problem.

    [bold]Examples[/]

      bashgym validate samplers --set 'pipeline.expressions.p={{ difficulty }} task'

      bashgym validate coding-agent-sft -s files --set source.path=examples/tasks.csv -j llm-rubric
    """
    from bashgym.pipeline_ops import prepare, validate

    host, settings, resolved = _pipeline_spec(pipeline, source, judge, sets, maps, plugin)
    try:
        with prepare(resolved, host, settings, serve=False, console=err) as prepared:
            result = validate(prepared)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "valid": result.ok,
                    "seed": origin,
                    "columns": [vars(c) for c in result.columns],
                    "problems": result.problems,
                    "warnings": result.warnings,
                },
                indent=2,
            )
        )
    else:
        table = Table("column", "type", "from", "dropped")
        for c in result.columns:
            table.add_row(c.name, c.kind, c.origin, "yes" if c.drop else "")
        out.print(table)
        for warning in result.warnings:
            err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if not result.ok:
        for problem in result.problems[:-1]:
            err.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
        raise fail(escape(result.problems[-1]))
    if not as_json:
        seeded = f"; seed: {origin}" if origin else ""
        out.print(f"[green]valid[/]: {len(result.columns)} columns{seeded}", highlight=False)


def preview_command(
    pipeline: PipelineArg,
    num_records: Annotated[
        int, typer.Option("-n", "--num-records", min=1, help="Rows to generate.")
    ] = 5,
    source: SourceOpt = None,
    judge: JudgeOpt = None,
    sets: SetOpt = None,
    maps: MapOpt = None,
    plugin: PluginOpt = None,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=20, help="Cut longer text values to this length.")
    ] = 400,
    as_json: JsonOpt = False,
) -> None:
    """Generate a few rows with PIPELINE and print them; nothing is written.

    Models are called as in [bold]bashgym run[/] (the embedded model starts if an alias uses
    it). The seed comes from [bold]-s SOURCE[/], else the pipeline's example seed. Rows that
    fail to generate or that the pipeline drops are counted by reason below the records.

    [bold]Examples[/]

      bashgym preview samplers -n 3

      bashgym preview coding-agent-sft -n 2 -s files --set source.path=examples/tasks.csv

      bashgym preview tool-use-sft --json | jq '.records[0]'
    """
    from bashgym.pipeline_ops import prepare, preview

    host, settings, resolved = _pipeline_spec(pipeline, source, judge, sets, maps, plugin)
    try:
        with prepare(resolved, host, settings, serve=True, console=err) as prepared:
            result = preview(prepared, num_records)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc)) from None
    records = [
        {str(k): _plain(v) for k, v in row.items()}
        for row in result.dataset.to_dict(orient="records")
    ]
    if as_json:
        doc = {
            "requested": result.requested,
            "generated": result.generated,
            "dropped": result.dropped,
            "seed": origin,
            "records": records,
        }
        typer.echo(json.dumps(doc, indent=2, default=str))
        return
    for i, record in enumerate(records, 1):
        out.print(_record_panel(record, f"{pipeline} record {i} of {len(records)}", max_chars))
    dropped = ", ".join(f"{n} {reason}" for reason, n in result.dropped.items()) or "none"
    out.print(
        f"[green]{len(records)}[/] of {result.requested} requested rows; dropped: "
        f"{escape(dropped)}" + (f"; seed: {origin}" if origin else ""),
        highlight=False,
    )


def pipeline_export(
    pipeline: PipelineArg,
    out_file: Annotated[Path, typer.Argument(help="Config file to write: .yaml, .yml or .json.")],
    source: SourceOpt = None,
    judge: JudgeOpt = None,
    sets: SetOpt = None,
    maps: MapOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Write PIPELINE's DataDesigner config for the [bold]data-designer[/] CLI.

    Next to OUT go the seed rows as OUT-stem.seed.parquet (when the config has a seed) and a
    DATA_DESIGNER_HOME folder OUT-stem.dd-home/ whose model_providers.yaml points at the model
    aliases the config uses (keys stay env var names). No model is called. Pipelines with
    Python-only columns (custom generators, local_callable validators) cannot be exported.

    [bold]Examples[/]

      bashgym pipeline export samplers out/samplers.yaml

      bashgym pipeline export coding-agent-sft sft.yaml -s files --set source.path=tasks.csv

    Then run the printed [bold]data-designer create[/] command.
    """
    from bashgym.pipeline_ops import export, prepare

    host, settings, resolved = _pipeline_spec(pipeline, source, judge, sets, maps, plugin)
    try:
        with prepare(resolved, host, settings, serve=False, console=err) as prepared:
            result = export(prepared, out_file)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc)) from None
    out.print(f"[green]wrote[/] {result.config}", highlight=False)
    if result.seed:
        out.print(f"  seed rows ({origin}): {result.seed}", highlight=False)
    out.print(f"  providers: {result.home / 'model_providers.yaml'}", highlight=False)
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    out.print("run it with:", highlight=False)
    out.print(f"  {result.command}", highlight=False, markup=False, soft_wrap=True)


def _plain(value: Any) -> Any:
    """JSON-like Python values from what pandas/pyarrow hand back (numpy arrays, NaN, numpy
    scalars), so records print and serialize the same whatever produced them."""
    import math

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        return [_plain(v) for v in list(value)]
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


MAX_LINES = 24


def _clip(text: str, max_chars: int) -> str:
    """Long text cut to `max_chars` and MAX_LINES lines, saying how much was left out."""
    lines = text.splitlines()
    cut = "\n".join(lines[:MAX_LINES])[:max_chars]
    hidden = len(text) - len(cut)
    return cut if hidden <= 0 else f"{cut.rstrip()} … [+{hidden} chars]"


def _render_value(value: Any, max_chars: int) -> Any:
    from rich.pretty import Pretty
    from rich.text import Text

    if value is None:
        return Text("-", style="dim")
    if isinstance(value, str):
        return Text(_clip(value, max_chars))
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and "role" in m for m in value)
    ):
        return _messages(value, max_chars)
    if isinstance(value, (dict, list)):
        return Pretty(value, max_string=max_chars, max_length=12, max_depth=5, indent_guides=True)
    return Text(str(value))


def _messages(messages: list[dict[str, Any]], max_chars: int) -> Any:
    """Chat messages (the common output shape) as `role: content` lines, tool calls pretty."""
    from rich.console import Group
    from rich.pretty import Pretty
    from rich.text import Text

    parts: list[Any] = []
    for message in messages:
        line = Text(f"{message.get('role')}: ", style="bold magenta")
        content = message.get("content")
        if isinstance(content, str):
            line.append(_clip(content, max_chars))
        elif content is not None:
            line.append(_clip(json.dumps(content, default=str), max_chars))
        parts.append(line)
        extra = {k: v for k, v in message.items() if k not in ("role", "content") and v}
        if extra:
            parts.append(Pretty(extra, max_string=max_chars, max_length=8, max_depth=4))
    return Group(*parts)


def _record_panel(record: dict[str, Any], title: str, max_chars: int) -> Any:
    from rich.panel import Panel

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in record.items():
        grid.add_row(key, _render_value(value, max_chars))
    return Panel(grid, title=title, title_align="left", border_style="blue")


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
    app.command("plugins")(plugins_command)
    app.command("options")(options_command)
    config = typer.Typer(help="Inspect settings.", no_args_is_help=True)
    config.command("show")(config_show)
    app.add_typer(config, name="config")
    models = typer.Typer(help="List model aliases; check them.", invoke_without_command=True)
    models.callback()(models_list)
    models.command("check")(models_check)
    app.add_typer(models, name="models")
    app.command("preview")(preview_command)
    app.command("validate")(validate_command)
    pipelines = typer.Typer(help="List pipelines; export one for the data-designer CLI.")
    pipelines.command("list")(pipeline_list)
    pipelines.command("export")(pipeline_export)
    app.add_typer(pipelines, name="pipeline", no_args_is_help=True)
    _add_plugin_commands(app, host or current_host())
    return app


def _add_plugin_commands(app: typer.Typer, host: PluginHost) -> None:
    for impl in host.pm.hook.register_commands.get_hookimpls():
        before = _command_names(app)
        try:
            impl.function(app=app)
        except Exception as exc:  # noqa: BLE001 -- a broken plugin command never breaks the CLI
            if impl.plugin_name in host.infos:
                host.infos[impl.plugin_name].error = f"register_commands failed: {exc}"
            continue
        after = _command_names(app)
        if impl.plugin_name in host.infos:
            host.infos[impl.plugin_name].registers["commands"] = sorted(
                n for n in after - before if n
            )


def _command_names(app: typer.Typer) -> set[str]:
    names = {
        c.name or (c.callback.__name__.replace("_", "-") if c.callback else "")
        for c in app.registered_commands
    }
    return names | {g.name or "" for g in app.registered_groups}


def main() -> None:
    build_app()()


__all__ = ["KINDS", "build_app", "current_host", "main", "use_host"]
