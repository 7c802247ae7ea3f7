"""`bashgym pipeline list|export`, `bashgym validate` and `bashgym preview` (Typer commands).

The work is in the sibling modules; these functions parse flags into the same spec a run uses
(`--set`, `--map`, `--plugin`) and print the result for a person or as `--json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import err, fail, out, report_broken_plugins
from bashgym_cli.runs import resolve_spec
from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bashgym.contracts import InputError
from bashgym.plugins import PluginHost, current_host
from bashgym.runspec import RunSpec, StepSpec
from bashgym.settings import SettingsError, load_settings
from bashgym.text import plain
from bashgym_commands_pipeline import (
    export,
    list_pipelines,
    prepare,
    preview,
    resolve_pipeline,
    validate,
)

# --------------------------------------------------------------------------------------------
# Pipeline commands: list, preview, validate, export (the work is in bashgym_commands_pipeline).

# upper-case metavars, as RUN_FILE, ROLE, NAME: the usage line names what the help's prose names
PipelineArg = Annotated[
    str, typer.Argument(metavar="PIPELINE", help="Pipeline name (see `bashgym pipeline list`).")
]
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
    on_error: Callable[[str], BaseException] = fail,
) -> tuple[PluginHost, Any, Any]:
    """Settings, host and the resolved spec, through the same `--set`/`--plugin` path as `run`;
    a mistake (a bad --set, an unknown name) is said by `on_error` (with --json: as JSON on
    stdout, so a script reading it gets JSON whatever happened)."""

    def build() -> RunSpec:
        return RunSpec(
            source=StepSpec(plugin=source) if source else None,
            pipeline=StepSpec(plugin=pipeline),
            judges=[StepSpec(plugin=j) for j in judge or []],
            plugins=list(plugin or []),
        )

    return resolve_spec(build, sets=sets, maps=maps, resolver=resolve_pipeline, on_error=on_error)


def _invalid_doc(message: str) -> dict[str, Any]:
    """validate's own --json shape, so a script reads `valid` and `problems` either way."""
    return {"valid": False, "seed": None, "columns": [], "problems": [message], "warnings": []}


def pipeline_list(as_json: JsonOpt = False) -> None:
    """List pipelines: plugin, description, output format, seed needs, and the columns each
    builds with its default options (no model is called; a pipeline that fails to build shows
    its error instead of columns).

    [bold]Examples[/]

      bashgym pipeline list

      bashgym pipeline list --json | jq '.[].columns'
    """
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc), as_json=as_json) from None
    host = current_host()
    report_broken_plugins(host)
    infos = list_pipelines(host, settings)
    if as_json:
        typer.echo(json.dumps([asdict(i) for i in infos], indent=2))
        return
    if not infos:
        out.print("no pipelines installed (see `bashgym plugins`)")
        return
    from bashgym_commands_inspect import Field, print_listing

    # a table only when the names fit whole, else a block per pipeline: a name the user types
    # is never folded or cut (`code-graph-pai|rs` at 80 columns before)
    fields = [Field("pipeline", name=True), Field("plugin", name=True), Field("output"),
              Field("seed"), Field("description"), Field("columns")]  # fmt: skip
    rows = []
    for info in infos:
        seed = "required" if info.needs_seed else "optional"
        if info.example_seed:
            seed += f"\nexample: {', '.join(info.seed_columns)}"
        columns = ", ".join(c.name for c in info.columns)
        if info.error:  # an option to set is no failure: say what to set
            columns = f"to list them, {info.needs}" if info.needs else f"build failed: {info.error}"
        rows.append([info.name, info.plugin, info.output_format, seed, info.description, columns])
    print_listing(out, fields, rows)


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

      bashgym validate samplers --set 'pipeline.expressions.p={{ difficulty }}'

      bashgym validate coding-agent-sft -j llm-rubric \\
          -s files --set source.path=examples/tasks.csv
    """
    spec = (pipeline, source, judge, sets, maps, plugin)
    host, settings, resolved = _pipeline_spec(
        *spec, on_error=lambda message: fail(message, as_json=as_json, doc=_invalid_doc)
    )
    try:
        with prepare(resolved, host, settings, serve=False, console=err) as prepared:
            result = validate(prepared)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc), as_json=as_json, doc=_invalid_doc) from None
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
            # Text: a column's name is the user's (`--set pipeline.expressions.[x]=...`), not markup
            table.add_row(Text(c.name), Text(c.kind), Text(c.origin), "yes" if c.drop else "")
        out.print(table)
        for warning in result.warnings:
            err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if not result.ok:
        for problem in result.problems[:-1]:
            err.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
        raise fail(result.problems[-1])  # fail escapes: escaped here too it showed `\[x]`
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

      bashgym preview coding-agent-sft -n 2 \\
          -s files --set source.path=examples/tasks.csv

      bashgym preview tool-use-sft --json | jq '.records[0]'
    """
    spec = (pipeline, source, judge, sets, maps, plugin)
    host, settings, resolved = _pipeline_spec(
        *spec, on_error=lambda message: fail(message, as_json=as_json)
    )
    try:
        with prepare(resolved, host, settings, serve=True, console=err) as prepared:
            result = preview(prepared, num_records)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc), as_json=as_json) from None
    records = [
        {str(k): plain(v) for k, v in row.items()}
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
    out_file: Annotated[
        Path,
        typer.Argument(metavar="OUT_FILE", help="Config file to write: .yaml, .yml or .json."),
    ],
    source: SourceOpt = None,
    judge: JudgeOpt = None,
    sets: SetOpt = None,
    maps: MapOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Write PIPELINE's DataDesigner config for the [bold]data-designer[/] CLI.

    Next to OUT_FILE go the seed rows as STEM.seed.parquet (when the config has a seed; STEM is
    OUT_FILE's name without its suffix) and a DATA_DESIGNER_HOME folder STEM.dd-home/ whose
    model_providers.yaml points at the model aliases the config uses (keys stay env var
    names). No model is called. Pipelines with Python-only columns (custom generators,
    local_callable validators) cannot be exported.

    The file needs only [bold]data-designer[/]: BashGym's code-validation columns become
    DataDesigner's code validator (python, sql; shell is left out), and a filter, which
    DataDesigner lacks, becomes a bool column [bold]keep_row[/] (keep the rows where it is
    true). A note names every part that did not travel.

    [bold]Examples[/]

      bashgym pipeline export samplers out/samplers.yaml

      bashgym pipeline export coding-agent-sft sft.yaml \\
          -s files --set source.path=tasks.csv

    Then run the printed [bold]data-designer create[/] command.
    """
    host, settings, resolved = _pipeline_spec(pipeline, source, judge, sets, maps, plugin)
    try:
        with prepare(resolved, host, settings, serve=False, console=err) as prepared:
            result = export(prepared, out_file)
            origin = prepared.seed_origin
    except InputError as exc:
        raise fail(str(exc)) from None
    # a path is never folded (a user copies it), nor is any line where no person reads it (a
    # pipe, a file): rich wrapped at 80 columns there, a path alone after a trailing space
    out.print(f"[green]wrote[/] {escape(str(result.config))}", highlight=False, soft_wrap=True)
    if result.seed:
        seed = f"  seed rows ({escape(str(origin))}): {escape(str(result.seed))}"
        out.print(seed, highlight=False, soft_wrap=True)
    providers = escape(str(result.home / "model_providers.yaml"))
    out.print(f"  providers: {providers}", highlight=False, soft_wrap=True)
    for note in result.notes:
        note_line = f"[yellow]note:[/] {escape(note)}"
        err.print(note_line, highlight=False, soft_wrap=not err.is_terminal)
    out.print("run it with:", highlight=False)
    out.print(f"  {result.command}", highlight=False, markup=False, soft_wrap=True)


MAX_LINES = 24


def _clip(text: str, max_chars: int) -> str:
    """Long text cut to `max_chars` and MAX_LINES lines, saying how much was left out."""
    lines = text.splitlines()
    cut = "\n".join(lines[:MAX_LINES])[:max_chars]
    hidden = len(text) - len(cut)
    return cut if hidden <= 0 else f"{cut.rstrip()} … [+{hidden} chars]"


def _render_value(value: Any, max_chars: int) -> Any:
    # ~10 ms: rich.pretty only when a record is shown (this module loads with every command)
    from rich.pretty import Pretty

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
    from rich.pretty import Pretty  # (see _render_value)

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
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in record.items():
        grid.add_row(key, _render_value(value, max_chars))
    return Panel(grid, title=title, title_align="left", border_style="blue")


def register(app: typer.Typer) -> None:
    app.command("preview")(preview_command)
    app.command("validate")(validate_command)
    pipelines = typer.Typer(help="List pipelines; export one for the data-designer CLI.")
    pipelines.command("list")(pipeline_list)
    pipelines.command("export")(pipeline_export)
    app.add_typer(pipelines, name="pipeline", no_args_is_help=True)
