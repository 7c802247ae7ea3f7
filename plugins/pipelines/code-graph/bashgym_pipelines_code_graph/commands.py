"""`bashgym graph stats PATH` and `bashgym graph inspect FILE -n 10`.

Both read what a run wrote — the triplets Parquet (a file, or a folder of shards) and, when it
sits in a run directory, run.json — so they work on a copied dataset as well as on a run dir.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError

from bashgym.contracts import InputError
from bashgym.text import explain_validation

app = typer.Typer(
    help="Look at code-graph triplets: counts per type, and rows.", no_args_is_help=True
)


def locate(path: Path) -> tuple[Path, Path | None]:
    """(the Parquet to read, the run.json beside it if any) for a file, shard folder or run dir."""
    if not path.exists():
        raise InputError(f"{str(path)!r} does not exist")
    run_json = None
    for folder in (path, path.parent, path.parent.parent):
        if (folder / "run.json").is_file():
            run_json = folder / "run.json"
            break
    if path.is_dir() and (path / "data.parquet").is_file():
        return path / "data.parquet", run_json
    if path.is_dir() and not list(path.glob("*.parquet")):
        raise InputError(f"{str(path)!r} holds no Parquet file (data.parquet or shards)")
    return path, run_json


# what each command reads of a triplet row; a file without them is not code-graph triplets
STATS_COLUMNS = ("pair_type", "source_repo")
ROW_COLUMNS = ("pair_type", "weight", "source_repo", "anchor", "positive", "negative")


def load(path: Path, columns: tuple[str, ...]) -> Any:
    """The dataset as a frame, refused in one line when it is not Parquet or lacks `columns`."""
    # ~0.65 s (measured): pandas and pyarrow only when a dataset is read; this module loads
    # with every command
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
        raise InputError(f"{str(path)!r} is not a readable Parquet dataset: {exc}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"{str(path)!r} has no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}: "
            "not code-graph triplets"
        )
    if "weight" in columns and not pd.api.types.is_numeric_dtype(frame["weight"]):
        raise InputError(
            f"{str(path)!r}: its weight column is not numeric ({frame['weight'].dtype})"
        )
    return frame


class _Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class RunFigures(BaseModel):
    """The part of run.json that `graph stats` reads (other keys are ignored). Validated, so a
    file that is not JSON, or not the object a run writes, is one line naming what is wrong."""

    counts: dict[str, int | dict[str, int] | None] = {}
    usage: _Usage = _Usage()
    cost_usd: float | None = 0.0  # None: a model without a price answered (cost_known_usd)
    cost_known_usd: float | None = None
    cost_unknown_for: list[str] = []


def read_run_json(path: Path) -> RunFigures:
    try:
        return RunFigures.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise InputError(
            f"{str(path)!r} is not a run's run.json: {explain_validation(exc)}"
        ) from None
    except OSError as exc:
        raise InputError(f"{str(path)!r} cannot be read: {exc.strerror or exc}") from None


def stats(path: Path) -> dict[str, Any]:
    """Pairs by type and repository from the data; graph, Q&A and cost figures from run.json."""
    data_path, run_json = locate(path)
    summary = read_run_json(run_json) if run_json is not None else None
    frame = load(data_path, STATS_COLUMNS)
    out: dict[str, Any] = {
        "data": str(data_path),
        "pairs": len(frame),
        "pairs_by_type": {k: int(v) for k, v in frame["pair_type"].value_counts().items()},
        "pairs_by_repo": {k: int(v) for k, v in frame["source_repo"].value_counts().items()},
    }
    if summary is None:
        return out
    counts = {k: v for k, v in summary.counts.items() if isinstance(v, int)}
    dropped = summary.counts.get("dropped")
    dropped = dropped if isinstance(dropped, dict) else {}
    out["repos"] = counts.get("graph.repos", 0)
    out["nodes"] = counts.get("graph.nodes", 0)
    out["edges"] = {
        k.removeprefix("graph.edges."): v for k, v in counts.items() if k.startswith("graph.edges.")
    }
    out["files"] = {
        k: counts.get(f"graph.{k}", 0) for k in ("files", "files_failed", "files_skipped")
    }
    out["qa"] = {
        "accepted": counts.get("qa.accepted", 0),
        "rejected": sum(n for reason, n in dropped.items() if "code-qa" in reason),
        "skipped_budget": counts.get("qa.skipped_budget", 0),
    }
    usage = summary.usage
    out["tokens"] = {"input": usage.input_tokens, "output": usage.output_tokens}
    out["cost_usd"] = summary.cost_usd
    if summary.cost_unknown_for:  # a run.json of bashgym 0.1 kept the known part in cost_usd
        out["cost_usd"] = None
        out["cost_known_usd"] = summary.cost_known_usd or summary.cost_usd or 0.0
        out["cost_unknown_for"] = summary.cost_unknown_for
    return out


def _lines(data: dict[str, Any]) -> list[str]:
    lines = [f"{data['pairs']} pairs in {data['data']}"]
    for title, key in (("by type", "pairs_by_type"), ("by repository", "pairs_by_repo")):
        lines.append(f"  {title}:")
        lines += [f"    {k:<14} {v:>9}" for k, v in data[key].items()]
    if "nodes" in data:
        lines.append(f"graph: {data['repos']} repositories, {data['nodes']} nodes")
        lines += [f"    {k:<14} {v:>9}" for k, v in data["edges"].items()]
        files = data["files"]
        lines.append(
            f"files: {files['files']} parsed, {files['files_failed']} failed, "
            f"{files['files_skipped']} skipped"
        )
        qa = data["qa"]
        lines.append(
            f"Q&A: {qa['accepted']} accepted, {qa['rejected']} rejected, "
            f"{qa['skipped_budget']} not asked (budget)"
        )
        tokens = data["tokens"]
        cost = f"${data['cost_usd']:.4f}" if data["cost_usd"] is not None else "unknown"
        if data.get("cost_unknown_for"):
            known = data.get("cost_known_usd") or 0.0
            cost = (f"${known:.4f} + " if known else "") + "unknown"
            cost += f" (no price for {', '.join(data['cost_unknown_for'])})"
        lines.append(f"tokens: {tokens['input']} in, {tokens['output']} out; cost {cost}")
    return lines


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input is one line on stderr and exit status 2, as for `bashgym run`."""
    try:
        yield
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _short(text: Any, width: int) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _known_type(pair_type: str, frame: Any) -> str:
    """`pair_type` when the pipeline makes it (or the data holds it), else refused with the
    valid ones: a typo showed `0 of 0 rows` and exited 0, as if there were none."""
    # ~0.16 s (measured; DataDesigner's rubrics, through triplets): only with --type
    from bashgym_pipelines_code_graph.pairs import STRUCTURAL_TYPES
    from bashgym_pipelines_code_graph.triplets import QA_TYPES

    held = sorted({str(t) for t in frame["pair_type"].dropna()})
    valid = sorted({*STRUCTURAL_TYPES, *QA_TYPES, *held})
    if pair_type not in valid:
        raise InputError(
            f"--type {pair_type!r} is not a pair type; valid: {', '.join(valid)} "
            f"(this data holds {', '.join(held) or 'no rows'})"
        )
    return pair_type


@app.command("stats")
def stats_command(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="A run dir, a triplets Parquet file or shards.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Pairs by type and repository; with a run dir: nodes, edges, Q&A, tokens and cost."""
    with user_errors():
        data = stats(path)
    typer.echo(json.dumps(data, indent=2) if as_json else "\n".join(_lines(data)))


@app.command("inspect")
def inspect_command(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="A triplets Parquet file (or run dir/shards).")
    ],
    n: Annotated[int, typer.Option("-n", "--rows", min=1, help="Rows to show.")] = 10,
    pair_type: Annotated[
        str | None, typer.Option("--type", help="Only rows of this pair_type.")
    ] = None,
    width: Annotated[int, typer.Option(min=10, help="Characters shown per text.")] = 100,
) -> None:
    """The first rows: type, weight, repository, ids, and the start of each text."""
    with user_errors():
        data_path, _ = locate(path)
        frame = load(data_path, ROW_COLUMNS)
        if pair_type is not None:
            frame = frame[frame["pair_type"] == _known_type(pair_type, frame)]
    shown = frame.head(n)
    typer.echo(f"{len(shown)} of {len(frame)} rows of {data_path}")
    for i, row in enumerate(shown.to_dict(orient="records")):
        typer.echo(
            f"[{i}] {row['pair_type']}  weight={row['weight']:g}  repo={row['source_repo']}  "
            f"{row.get('anchor_id') or '(question)'} -> {row.get('positive_id')} "
            f"(negative {row.get('negative_id')})"
        )
        for column in ("anchor", "positive", "negative"):
            typer.echo(f"    {column:<8} {_short(row[column], width)}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="graph")
