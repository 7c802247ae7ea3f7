"""BashGym plugin `report`: report.html beside every run.json, and `bashgym report RUN_DIR`.

Everything the page shows is read back from the run directory — run.json, events.jsonl, the
sinks' outputs, dropped.jsonl and DataDesigner's saved config — so a report can be made again at
any time, from a copied run dir, by the same code that writes it at the end of a run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out
from bashgym_cli.oserrors import os_problem

from bashgym import hookimpl
from bashgym.contracts import InputError
from bashgym.events import Artifact
from bashgym.text import condense, one_line
from bashgym_commands_report.columns import ReportColumns, columns_from_config, columns_of
from bashgym_commands_report.render import REPORT_FILE, render_report, write_report
from bashgym_commands_report.rundir import (
    chart_config,
    chart_frame,
    dropped_trace_stats,
    kept_samples,
    output_files,
    read_dropped,
    read_job,
    step_drops,
    trace_stats,
)

__all__ = [
    "REPORT_FILE",
    "ReportColumns",
    "columns_from_config",
    "columns_of",
    "render_report",
    "report_for",
    "write_report",
]


def report_for(run_dir: Path, summary: dict[str, Any] | None = None) -> Path:
    """Write RUN_DIR/report.html from what the run dir holds; return its path."""
    run_dir = Path(run_dir)
    if summary is None:
        summary = json.loads((run_dir / "run.json").read_text())
    plugins = summary.get("plugins") if isinstance(summary.get("plugins"), dict) else {}
    # a run with no pipeline or judge made no DataDesigner files: any there are another run's
    config = chart_config(run_dir) if {"pipeline", "judge"} & set(plugins) else None
    columns = columns_from_config(config) if config else ReportColumns(samplers=[], judges={})
    files = output_files(summary, run_dir)
    dropped = read_dropped(run_dir)
    kept, charted_from = chart_frame(files, run_dir, columns.charted)
    return write_report(
        run_dir,
        summary,
        kept=kept,
        charted_from=charted_from,
        dropped=dropped,
        columns=columns,
        samples=kept_samples(files),
        steps=step_drops(run_dir / "events.jsonl"),
        traces=trace_stats(files),
        dropped_traces=dropped_trace_stats(dropped),
        job=read_job(run_dir),
    )


@hookimpl
def on_run_end(summary, run):
    try:
        path = report_for(run.run_dir, summary)
    except Exception as exc:  # noqa: BLE001 -- the data is written; the report is a view of it
        why = (
            os_problem(exc, with_path=True) if isinstance(exc, OSError) else one_line(exc)
        )  # else: a bug
        run.note(f"report.html not written: {why}")
        return
    run.emit(Artifact(name="report", path=str(path)))


def report_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A run directory (it holds run.json).")
    ],
) -> None:
    """Write RUN_DIR/report.html again from what the run directory holds.

    It reads run.json, events.jsonl, the sinks' outputs, the dropped rows and DataDesigner's
    saved config: for a run made before an upgrade, or one copied from elsewhere."""
    import pyarrow as pa  # ~0.15 s (measured): only when a report is written

    summary = read_summary(run_dir)
    try:
        written = report_for(run_dir, summary)
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        # a copied run dir is user input: a file in it that is not what a run writes
        raise fail(f"{run_dir}: cannot write the report: {problem(exc)}") from None
    out.print(f"[green]wrote[/] {written}", highlight=False)


def problem(exc: Exception) -> str:
    """Why the report could not be made, in words: the OS's reason for a file, else a file in
    the run dir that is not what a run writes (its reader's own message, no class name)."""
    if isinstance(exc, OSError):
        return os_problem(exc, with_path=True)
    text = condense(str(exc).splitlines())
    if isinstance(exc, KeyError):
        text = f"no {text} in it"
    return "a file of the run is not what a run writes" + (f" ({text})" if text else "")


def read_summary(run_dir: Path) -> dict[str, Any]:
    """RUN_DIR/run.json as the object a run writes; InputError (one line, exit 2) otherwise."""
    path = run_dir / "run.json"
    if not run_dir.exists():  # a typo in the path: "not a run directory" sends one looking in it
        raise InputError(f"{run_dir} does not exist (give a run's --out folder)")
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is a file, not a run directory (give a run's --out folder)")
    if not path.is_file():
        raise InputError(f"{run_dir} is not a run directory (no run.json)")
    try:
        summary = json.loads(path.read_bytes())
    except ValueError as exc:  # not UTF-8, or not JSON
        raise InputError(f"{path} is not JSON: {exc}") from None
    if not isinstance(summary, dict):
        raise InputError(f"{path} holds a JSON {type(summary).__name__}, not a run's summary")
    return summary


@hookimpl
def register_commands(app):
    app.command("report")(report_command)
