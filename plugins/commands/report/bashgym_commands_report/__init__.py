"""BashGym plugin `report`: report.html beside every run.json, and `bashgym report RUN_DIR`.

Everything the page shows is read back from the run directory — run.json, dropped.jsonl,
DataDesigner's batches and saved config — so a report can be made again at any time, from a
copied run dir, by the same code that writes it at the end of a run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out

from bashgym import hookimpl
from bashgym.contracts import InputError
from bashgym.events import Artifact
from bashgym.records import DroppedRow
from bashgym.text import one_line
from bashgym_commands_report.render import (
    REPORT_FILE,
    ReportColumns,
    columns_from_config,
    columns_of,
    render_report,
    write_report,
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
    # ~0.5 s and ~0.15 s (measured): pandas and pyarrow only when a report is written, not in
    # every command (this plugin loads with all of them)
    import pandas as pd
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    if summary is None:
        summary = json.loads((run_dir / "run.json").read_text())
    datasets = sorted(p for p in (run_dir / "datadesigner").glob("*") if p.is_dir())
    # ignore_metadata: a structured column is stored as `struct<...>[pyarrow]`, a dtype name
    # pandas writes into the file but cannot parse back; the Arrow schema alone reads (as dicts).
    frames = [
        pq.read_table(f).to_pandas(ignore_metadata=True)
        for d in datasets
        for f in sorted((d / "parquet-files").glob("*.parquet"))
    ]
    frames = [f for f in frames if len(f)]
    dropped = []
    dropped_file = run_dir / "dropped.jsonl"
    for line in dropped_file.read_text().splitlines() if dropped_file.is_file() else []:
        item = json.loads(line)
        dropped.append(DroppedRow(item["by"], item["reason"], item.get("row") or {}))
    columns = ReportColumns(samplers=[], judges={})
    for d in datasets:
        if (d / "builder_config.json").is_file():
            columns = columns_from_config(json.loads((d / "builder_config.json").read_text()))
            break
    return write_report(
        run_dir,
        summary,
        kept=pd.concat(frames, ignore_index=True) if frames else None,
        dropped=dropped,
        columns=columns,
    )


@hookimpl
def on_run_end(summary, run):
    try:
        path = report_for(run.run_dir, summary)
    except Exception as exc:  # noqa: BLE001 -- the data is written; the report is a view of it
        run.note(f"report.html not written: {type(exc).__name__}: {exc}")
        return
    run.emit(Artifact(name="report", path=str(path)))


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (it holds run.json).")],
) -> None:
    """Write RUN_DIR/report.html again from what the run directory holds.

    It reads run.json, the dropped rows and DataDesigner's batches: for a run made before an
    upgrade, or one copied from elsewhere."""
    import pyarrow as pa  # (see report_for)

    summary = read_summary(run_dir)
    try:
        written = report_for(run_dir, summary)
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        # a copied run dir is user input: a file in it that is not what a run writes
        raise fail(f"{run_dir}: cannot write the report: {one_line(exc)}") from None
    out.print(f"[green]wrote[/] {written}", highlight=False)


def read_summary(run_dir: Path) -> dict[str, Any]:
    """RUN_DIR/run.json as the object a run writes; InputError (one line, exit 2) otherwise."""
    path = run_dir / "run.json"
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
