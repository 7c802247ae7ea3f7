"""The run engine: source → pipeline (DataDesigner) → judges → sinks, in a run directory.

A run directory holds `run.toml` (the resolved config, re-runnable with `bashgym run run.toml`),
DataDesigner's artifacts, the sinks' outputs and `run.json` (counts generated / kept / dropped
by reason, usage, cost, timings). `run.json` is written when the run starts and rewritten when it
ends, with `status = failed` and the error if it crashes, so a crash never leaves a silent dir.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from bashgym import __version__
from bashgym.contracts import InputError, Judge, Pipeline, PipelineOptions, RunContext
from bashgym.drops import DroppedRow
from bashgym.generation import PipelineOutcome, run_pipeline
from bashgym.models import ModelSession
from bashgym.records import Trace, trace_to_row
from bashgym.runspec import ResolvedRun, Step
from bashgym.scrub import scrub_dataset

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.plugins import PluginHost
    from bashgym.settings import Settings

MAX_NOTES = 200  # run.json stays readable; the counts carry the totals


def resolved_toml(resolved: ResolvedRun, run_dir: Path) -> str:
    """The spec with every option filled in from the plugins' models (defaults included)."""

    def full(step: Step | None) -> dict[str, Any] | None:
        if step is None:
            return None
        return {"plugin": step.name, "options": step.options.model_dump(mode="json")}

    spec = resolved.spec.model_copy(update={"out": run_dir}).model_dump(mode="json")
    spec.update(
        source=full(resolved.source),
        pipeline=full(resolved.pipeline),
        judges=[full(s) for s in resolved.judges],
        sinks=[full(s) for s in resolved.sinks],
    )
    return type(resolved.spec).model_validate(spec).to_toml()


class RunRecorder:
    """Owns run.json: timings per step, final counts, and the failure if there is one."""

    def __init__(
        self, run_dir: Path, resolved: ResolvedRun, *, config_hash: str, attempt: int = 1
    ) -> None:
        self.path = run_dir / "run.json"
        self.started = time.perf_counter()
        self.timings: dict[str, float] = {}
        self.data: dict[str, Any] = {
            "bashgym_version": __version__,
            "status": "running",
            "pid": os.getpid(),
            "run_dir": str(run_dir),
            "config_hash": config_hash,
            "attempt": attempt,
            "started_at": datetime.now(UTC).isoformat(),
            "plugins": _plugins(resolved),
        }
        self.write()

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - t0, 4)

    def write(self, **update: Any) -> dict[str, Any]:
        self.data.update(update)
        self.data["timings_s"] = {
            **self.timings,
            "total": round(time.perf_counter() - self.started, 4),
        }
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        tmp.replace(self.path)  # atomic: a reader never sees half a file
        return self.data


def _plugins(resolved: ResolvedRun) -> dict[str, Any]:
    """Which plugin serves each role: one entry for source/pipeline, a list for judges/sinks."""
    out: dict[str, Any] = {}
    for step in _steps(resolved):
        entry = {"name": step.name, "from": step.registered.plugin}
        if step.role in ("judge", "sink"):
            out.setdefault(step.role, []).append(entry)
        else:
            out[step.role] = entry
    return out


def _steps(resolved: ResolvedRun) -> list[Step]:
    return [s for s in (resolved.source, resolved.pipeline) if s] + resolved.judges + resolved.sinks


def _progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _as_row(item: Any) -> dict[str, Any]:
    if isinstance(item, Trace):
        return trace_to_row(item)
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json")
    return dict(item)


def read_source(step: Step, run: RunContext, host: PluginHost, progress: Progress) -> pd.DataFrame:
    """Source output as a DataFrame; Traces are announced through `on_trace` as they stream."""
    import pandas as pd

    out = step.obj.open(step.options, run)
    if isinstance(out, pd.DataFrame):
        return out
    task = progress.add_task(f"source {step.name}", total=None)
    notify = bool(host.hook.on_trace.get_hookimpls())
    rows = []
    for item in out:
        if notify and isinstance(item, Trace):
            host.hook.on_trace(trace=item, run=run)
        rows.append(_as_row(item))
        progress.advance(task)
    progress.update(task, total=len(rows))
    return pd.DataFrame(rows)


def apply_judges(
    dataset: pd.DataFrame,
    resolved: ResolvedRun,
    run: RunContext,
    dropped_rows: list[DroppedRow] | None = None,
) -> pd.DataFrame:
    """Keep the rows every judge's `verdicts` keeps; count (and collect) the others by reason."""
    for judge in resolved.judges:
        verdicts = judge.obj.verdicts(dataset, judge.options, run)
        dropped = verdicts.notna()
        for reason, n in verdicts[dropped].value_counts().items():
            run.drop(f"judge {judge.name}: {reason}", int(n))
        if dropped_rows is not None and dropped.any():
            for reason, row in zip(
                verdicts[dropped], dataset[dropped].to_dict(orient="records"), strict=True
            ):
                dropped_rows.append(DroppedRow(f"judge {judge.name}", str(reason), row))
        dataset = dataset[~dropped]
    return dataset.reset_index(drop=True)


class PassThrough(Pipeline):
    """Stands in for a pipeline when a run has none but its judges add DataDesigner columns:
    source rows go through DataDesigner one for one, so those judges score them."""

    def build(self, options: Any, run: RunContext, seed: pd.DataFrame | None) -> Any:
        import data_designer.config as dd

        return dd.DataDesignerConfigBuilder()


def _configuring_judges(resolved: ResolvedRun) -> bool:
    return any(type(j.obj).configure is not Judge.configure for j in resolved.judges)


def execute(
    resolved: ResolvedRun, host: PluginHost, settings: Settings, *, console: Console | None = None
) -> dict[str, Any]:
    """Run everything; return what run.json holds. Options were validated by `resolve()`.

    An unfinished run of the same config is resumed (see `bashgym.resume`).
    """
    from bashgym import resume as resuming

    console = console or Console(stderr=True)
    settings = with_run_overrides(settings, resolved)
    digest = resuming.config_hash(resolved, settings)
    try:
        target = resuming.choose(resolved, settings, digest)
    except resuming.RunInUseError as exc:
        raise InputError(str(exc)) from None
    run_dir = target.run_dir
    attempt = 1
    if target.resume:
        previous = json.loads((run_dir / "run.json").read_text())
        attempt = int(previous.get("attempt", 1)) + 1
        console.print(
            f"[yellow]resuming[/] {run_dir} (attempt {attempt}; the last one ended "
            f"{target.previous_status}): finished batches are kept",
            highlight=False,
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.toml").write_text(resolved_toml(resolved, run_dir))
    recorder = RunRecorder(run_dir, resolved, config_hash=digest, attempt=attempt)
    # One model session for the run: a runtime (e.g. the embedded server) starts on first use and
    # stops when the run ends, fails or is interrupted.
    models = ModelSession(settings, host.registry)
    run = RunContext(run_dir=run_dir, settings=settings, seed=resolved.spec.seed, models=models)
    outputs: dict[str, list[str]] = {}
    scrubbed: dict[str, Any] = {}
    outcome: PipelineOutcome | None = None
    dataset: pd.DataFrame | None = None
    try:
        with models, _progress(console) as progress:
            seed = None
            if resolved.source is not None:
                with recorder.step("source"):
                    seed = read_source(resolved.source, run, host, progress)
                run.count("source_rows", len(seed))
            pipeline_step = resolved.pipeline
            if pipeline_step is None and seed is not None and _configuring_judges(resolved):
                cap = resolved.spec.num_records
                pipeline_step = SimpleNamespace(  # duck-types the Step fields run_pipeline uses
                    obj=PassThrough(),
                    options=PipelineOptions(num_records=min(len(seed), cap or len(seed)) or None),
                    name="passthrough",
                )
            judge_drops: list[DroppedRow] = []
            if pipeline_step is not None and (seed is None or len(seed)):
                task = progress.add_task(f"pipeline {pipeline_step.name}", total=None)
                with recorder.step("pipeline"):
                    outcome = run_pipeline(
                        pipeline_step,
                        resolved,
                        run,
                        seed,
                        apply_judges=lambda df: apply_judges(df, resolved, run, judge_drops),
                        on_rows=lambda n: progress.advance(task, n),
                        set_total=lambda n: progress.update(task, total=n),
                        resume=target.resume,
                    )
                outcome.dropped.extend(judge_drops)
                dataset = outcome.dataset
            else:
                assert seed is not None  # resolve() guarantees a source or a pipeline
                cap = resolved.spec.num_records
                dataset = seed if cap is None else seed.head(cap)
                run.count("generated", len(dataset))
                with recorder.step("judges"):
                    dataset = apply_judges(dataset, resolved, run, judge_drops)
            with recorder.step("scrub"):  # before anything leaves the run: observers, sinks
                dataset, scrubbed = scrub_dataset(dataset, run.settings.scrub)
            if host.hook.on_record.get_hookimpls():
                for record in dataset.to_dict(orient="records"):
                    host.hook.on_record(record=record, run=run)
            with recorder.step("sinks"):
                for sink in resolved.sinks:
                    task = progress.add_task(f"sink {sink.name}", total=len(dataset))
                    paths = sink.obj.write(dataset, sink.options, run, _output_format(resolved))
                    outputs[sink.name] = [str(p) for p in paths]
                    progress.update(task, completed=len(dataset))
    except BaseException as exc:
        summary = recorder.write(
            status="failed",
            error=f"{type(exc).__name__}: {exc}",
            **_counts(run, None, outcome),
            outputs=outputs,
            scrub=scrubbed,
        )
        _write_report(run_dir, summary, outcome, console)
        raise
    summary = recorder.write(
        status="ok",
        **_counts(run, len(dataset), outcome),
        outputs=outputs,
        scrub=scrubbed,
        ended_at=datetime.now(UTC).isoformat(),
    )
    report = _write_report(run_dir, summary, outcome, console)
    if report is not None:
        summary = recorder.write(report=str(report))
    host.hook.on_run_end(summary=summary, run=run)
    return summary


def with_run_overrides(settings: Settings, resolved: ResolvedRun) -> Settings:
    """Settings with the run file's `[designer]` table over the configured one."""
    from pydantic import ValidationError

    from bashgym.settings import DesignerSettings

    if not resolved.spec.designer:
        return settings
    try:
        designer = DesignerSettings.model_validate(
            {**settings.designer.model_dump(), **resolved.spec.designer}
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"the run file's designer table: {problems}") from None
    return settings.model_copy(update={"designer": designer})


def _write_report(
    run_dir: Path, summary: dict[str, Any], outcome: PipelineOutcome | None, console: Console
) -> Path | None:
    """report.html beside run.json; a report that fails to render never fails the run."""
    import pandas as pd

    from bashgym.report import ReportColumns, columns_of, write_report

    try:
        raw = [frame for frame in (outcome.raw if outcome else []) if len(frame)]
        return write_report(
            run_dir,
            summary,
            kept=pd.concat(raw, ignore_index=True) if raw else None,
            dropped=outcome.dropped if outcome else [],
            columns=columns_of(outcome.builder)
            if outcome and outcome.builder
            else ReportColumns(samplers=[], judges={}),
        )
    except Exception as exc:  # noqa: BLE001 -- the data is written; the report is a view of it
        console.print(f"[yellow]report.html not written[/]: {type(exc).__name__}: {exc}")
        return None


def _output_format(resolved: ResolvedRun) -> str:
    """What the rows are: the pipeline's format, else the source's (e.g. "traces")."""
    step = resolved.pipeline or resolved.source
    return getattr(step.obj, "output_format", "rows") if step else "rows"


def _counts(
    run: RunContext, kept: int | None, outcome: PipelineOutcome | None = None
) -> dict[str, Any]:
    counts = dict(run.counts)
    if kept is not None:
        counts["kept"] = kept
    counts["dropped"] = dict(run.dropped)
    counts["dropped_total"] = sum(run.dropped.values())
    notes = run.notes[:MAX_NOTES] + (
        [f"... and {len(run.notes) - MAX_NOTES} more"] if len(run.notes) > MAX_NOTES else []
    )
    extra: dict[str, Any] = {}
    if outcome is not None:
        extra["usage_by_model"] = outcome.usage_by_model
        extra["rounds"] = [asdict(r) for r in outcome.rounds]
        extra["buffer_size"] = run.settings.designer.buffer_size
    return {
        "counts": counts,
        **extra,
        "usage": run.usage.model_dump(),
        "cost_usd": round(run.cost_usd, 6),
        "notes": notes,
    }
