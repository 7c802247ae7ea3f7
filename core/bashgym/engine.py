"""The run engine: source → [executor] → [pipeline] → judges → scrub → sinks, in a run directory:
`run.toml` (the resolved config, re-runnable), `events.jsonl`, `state.db` (the run store), the
runner's files (from scrubbed seed rows only), `dropped.jsonl` (each dropped row and why), the
sinks' outputs and `run.json` (counts, usage, cost, timings, plugins' sections), derived from the
events and rewritten as the run goes: a crash leaves `status = failed` and the error."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from bashgym import __version__, contracts
from bashgym import events as ev
from bashgym import resume as resuming
from bashgym.contracts import Generated, InputError, Judge, RunContext, Scrubbing, Written
from bashgym.records import TRACE_COLUMN, DroppedRow, Trace, trace_to_row
from bashgym.runspec import ResolvedRun, Step, resolved_toml
from bashgym.store import run_scratch
from bashgym.text import explain_validation, plain

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.plugins import PluginHost
    from bashgym.settings import Settings

DROPPED_FILE = "dropped.jsonl"
SCRATCH_DIR = "bashgym-scratch"  # not `tmp`: `--out .` must never empty a folder of the user's
UNWRITABLE = "cannot write the run directory {!r}: {}"  # the OS's reason, without class or errno
EXIT_EMPTY = 3  # a run that kept no rows: not an error in the config, not a success either


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP during a run: its status is recorded and it can resume."""

    def __init__(self, run_dir: Path, why: str) -> None:
        super().__init__(why)
        self.run_dir, self.why = run_dir, why


class RunJson:
    """Owns run.json: the run's identity plus the tally's summary, rewritten atomically."""

    def __init__(self, run_dir: Path, tally: ev.Tally, meta: dict[str, Any]) -> None:
        self.path, self.tally, self._last = run_dir / "run.json", tally, 0.0
        self.started = time.perf_counter()
        self.data: dict[str, Any] = {"bashgym_version": __version__, "status": "running", **meta}

    def __call__(self, event: ev.Event) -> None:
        """Subscriber: rewrite after each step, and at most every 2 s while a step runs."""
        if isinstance(event, ev.StepFinished) or time.monotonic() - self._last > 2.0:
            self.write()

    def write(self, **update: Any) -> dict[str, Any]:
        self.data.update({**update, **self.tally.summary()})
        self.data["timings_s"]["total"] = round(time.perf_counter() - self.started, 4)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        tmp.replace(self.path)  # atomic: a reader never sees half a file
        self._last = time.monotonic()
        return self.data


@dataclass
class Engine:
    """One run in progress: its context, its steps, what watches it, every row it dropped."""

    resolved: ResolvedRun
    host: PluginHost
    run: RunContext
    scrubbing: Scrubbing
    resume: bool
    dropped: list[DroppedRow] = field(default_factory=list)
    sink: str | None = None  # the sink at work (its step, or a batch to it): its drops are its

    def __call__(self, event: ev.Event) -> None:
        if self.sink is not None and isinstance(event, ev.RowDropped):
            row = DroppedRow(f"sink {self.sink}", event.reason, {"row_id": event.row_id})
            self.dropped.extend([row] * event.n)

    @contextmanager
    def step(self, name: str, total: int | None = None) -> Iterator[None]:
        self.run.emit(ev.StepStarted(step=name, total=total))
        t0, ok = time.perf_counter(), True
        self.sink = name.removeprefix("sink ") if name.startswith("sink ") else None
        try:
            yield
        except BaseException as exc:  # a stopped step hands back what it dropped so far (rounds)
            handed = getattr(exc, "dropped", None)  # a list of DroppedRow, or nothing to add
            self.dropped[:0], ok = handed if isinstance(handed, list) else [], False
            raise
        finally:
            self.sink = None
            self.run.emit(ev.StepFinished(step=name, duration_s=time.perf_counter() - t0, ok=ok))

    def source_rows(self) -> Iterator[pd.DataFrame]:
        """The source's rows in batches, each scrubbed before any pipeline, model, file or hook
        sees a row, and announced."""
        for batch in source_batches(self.resolved.source, self.run):  # type: ignore[arg-type]
            self.run.count("source_rows", len(batch))
            batch = self.scrubbing.frame(batch)
            self.announce_traces(batch)
            yield batch

    def read_source(self) -> pd.DataFrame:
        import pandas as pd

        with self.step("source"):
            return pd.concat(list(self.source_rows()), ignore_index=True)

    def stream(self, batches: Iterable[pd.DataFrame], step: str) -> None:
        """Scrubbed rows (no runner's: nothing needs them all at once) to the sinks batch by
        batch, one batch in memory: each capped at -n and judged, then added to every sink."""
        resolved, run, left = self.resolved, self.run, self.resolved.spec.num_records
        outs = [s.obj.stream(s.options, run, resolved.output_format()) for s in resolved.sinks]
        try:
            with self.step(step):
                for batch in batches:
                    batch = batch if left is None else batch.head(left)
                    left = None if left is None else left - len(batch)
                    run.count("generated", len(batch))
                    batch = apply_judges(batch, resolved, run, self.dropped)
                    for sink, out in zip(resolved.sinks, outs, strict=True):
                        self.sink = sink.name  # (and the step's end forgets it)
                        out.add(batch)
                    self.sink = None
                    if left == 0:
                        break
            for sink, out in zip(resolved.sinks, outs, strict=True):
                with self.step(f"sink {sink.name}"):
                    self.wrote(sink, out.close())
        except BaseException:
            for out in outs:
                out.discard()
            raise

    def execute_tasks(self, seed: pd.DataFrame) -> pd.DataFrame:
        """Each seed row a Task on the executor (the `run_tasks` hook): one trace row per task."""
        with self.step("executor"):
            rows = self.host.hook.run_tasks(rows=seed, resolved=self.resolved, run=self.run)
        if rows is None:
            raise InputError("running tasks needs a plugin: pip install bashgym-work-tasks")
        self.announce_traces(rows)
        return rows

    def announce_traces(self, rows: pd.DataFrame) -> None:
        """`on_trace` for each Trace a source or the executor gave (how traces feed on)."""
        if TRACE_COLUMN in rows.columns and self.host.hook.on_trace.get_hookimpls():
            for text in rows[TRACE_COLUMN]:
                self.host.hook.on_trace(trace=Trace.model_validate_json(text), run=self.run)

    def generate(self, seed: pd.DataFrame | None, runner: str) -> Generated:
        """The pipeline's rows (or the seed's, for the judges' columns) through `runner` (the
        `generate_rows` hook: bashgym-work-rounds makes them in rounds)."""
        with self.step("pipeline"):
            generated = self.host.hook.generate_rows(
                seed=seed, runner=runner, resolved=self.resolved, run=self.run, resume=self.resume,
                judge=lambda df: apply_judges(df, self.resolved, self.run, self.dropped),
            )  # fmt: skip
        if generated is None:
            raise InputError("generating rows needs a plugin: pip install bashgym-work-rounds")
        self.dropped[:0] = generated.dropped  # the runner's, before the judges'
        return generated  # type: ignore[no-any-return]

    def write(self, generated: Generated) -> None:
        with self.step("scrub"):
            dataset = self.scrubbing.frame(generated.dataset)
        fmt = self.resolved.output_format()
        for sink in self.resolved.sinks:
            with self.step(f"sink {sink.name}", total=len(dataset)):
                self.wrote(sink, sink.obj.write(dataset, sink.options, self.run, fmt))

    def wrote(self, sink: Step, written: Any) -> None:
        if not isinstance(written, Written):  # bashgym-core 0.1 took a list of paths
            raise TypeError(f"sink {sink.name!r} must return bashgym.contracts.Written")
        paths = [str(p) for p in written.paths]
        self.run.emit(ev.SinkWrote(sink=sink.name, rows=written.rows, paths=paths))
        self.run.emit(ev.RowsGenerated(step=f"sink {sink.name}", n=written.rows))


def execute(resolved: ResolvedRun, host: PluginHost, settings: Settings) -> dict[str, Any]:
    """Run everything (options checked by `resolve()`); return what run.json holds. An unfinished
    run of the same config and inputs resumes (`bashgym.resume`). The engine prints nothing: a
    person sees a run through its events (the terminal's display is an observer plugin)."""
    settings = with_run_overrides(settings, resolved)
    scrubbing = open_scrubbing(settings, host)
    digest, inputs = resuming.config_hash(resolved, settings), resuming.input_hash(resolved)
    redact = scrubbing.text if scrubbing.enabled else None
    command = redact(shlex.join(sys.argv)) if redact else shlex.join(sys.argv)
    try:
        target = resuming.choose(resolved, settings, digest, inputs, command)
    except resuming.RunInUseError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(UNWRITABLE.format(exc.filename, exc.strerror or exc)) from None
    run_dir = target.run_dir
    with target.lock or nullcontext(), run_scratch(run_dir / SCRATCH_DIR):  # till the run ends
        attempt = int(resuming.read_status(run_dir).get("attempt", 1)) + 1 if target.resume else 1
        try:
            toml = resolved_toml(resolved, run_dir)  # a key typed into --set never lands on disk
            (run_dir / "run.toml").write_text(redact(toml) if redact else toml)
        except OSError as exc:
            raise InputError(UNWRITABLE.format(str(run_dir), exc.strerror or exc)) from None
        earlier = {} if target.resume else resuming.read_status(run_dir)
        for old in [] if target.resume else resuming.leftovers(run_dir, earlier):  # started over
            old.unlink(missing_ok=True)
        bus = ev.EventBus(run_dir / "events.jsonl", redact=redact)
        models = contracts.open_models(settings, host.registry, host.hook)
        run = RunContext(run_dir, settings, resolved.spec.seed, models, bus, registry=host.registry,
                         scrubbing=scrubbing)  # fmt: skip
        if target.resume:  # usage and cost: what every attempt of this run spent
            run.tally.add_earlier(ev.read_events(run_dir / "events.jsonl"))
        meta = dict(pid=os.getpid(), run_dir=str(run_dir), config_hash=digest, input_hash=inputs,
                    attempt=attempt, started_at=datetime.now(UTC).isoformat(),
                    plugins=_plugins(resolved))  # fmt: skip
        recorder = RunJson(run_dir, run.tally, meta)
        engine = Engine(resolved, host, run, scrubbing, target.resume)
        for subscriber in (run.tally, recorder, engine):
            bus.subscribe(subscriber)
        if host.hook.on_event.get_hookimpls():  # (none: no call per event)
            bus.subscribe(lambda event: host.hook.on_event(event=event, run=run))
        resumed_from = target.previous_status if target.resume else None
        run.emit(ev.RunStarted(run_dir=str(run_dir), attempt=attempt, resumed_from=resumed_from))
        if ended := earlier.get("status"):  # (`--out` named another run's folder: say so)
            run.note(f"warning: replaced the earlier run in {run_dir} ({ended}): its files went")
        generated: Generated | None = None
        try:
            try:
                backend = resolved.backend
                opened = backend.obj.open(backend.options, resolved, run) if backend else None
                with run.models, opened or nullcontext():  # type: ignore[union-attr]
                    runner = pipeline_runner(resolved)
                    if runner is None and resolved.executor is None:  # source to sinks
                        engine.stream(engine.source_rows(), "source")
                    else:
                        seed = engine.read_source() if resolved.source else None
                        if resolved.executor is not None:
                            seed = engine.execute_tasks(seed)  # type: ignore[arg-type]
                        if runner is None or (seed is not None and not len(seed)):
                            engine.stream([seed], "judges")  # type: ignore[list-item]
                        else:
                            generated = engine.generate(seed, runner)
                            engine.write(generated)
            except BaseException as exc:
                interrupted = isinstance(exc, KeyboardInterrupt)
                status = "interrupted" if interrupted else "failed"
                if redact and len(exc.args) == 1 and isinstance(exc.args[0], str):
                    exc.args = (redact(exc.args[0]),)  # what the terminal prints, too
                why = str(exc) or "Ctrl-C"
                plain_words = interrupted or isinstance(exc, InputError)  # a crash's type is news
                error = why if plain_words else f"{type(exc).__name__}: {exc}"
                error = redact(error) if redact else error
                run.emit(ev.RunFinished(status=status, error=error))
                finish(recorder, host, run, status=status, error=error,
                       extra=_extra(engine, generated))  # fmt: skip
                if interrupted:
                    raise RunInterrupted(run_dir, why) from None
                raise
            # empty: no sink wrote a row (JSONL refusing all while Parquet kept them is not)
            wrote = run.tally.written.values()
            status = "empty" if wrote and not any(n != 0 for n in wrote) else "ok"
            extra = _extra(engine, generated)
            if status == "empty":
                top = run.tally.dropped.most_common(3)
                counts = ", ".join(f"{k} {n}" for k, n in run.counts.items() if n) or "no counts"
                why = "; ".join(f"{n} × {r}" for r, n in top) or f"no rows came in ({counts})"
                extra["warning"] = f"no rows were kept. Top drop reasons: {why}"
            run.emit(ev.RunFinished(status=status, error=extra.get("warning")))
            return finish(recorder, host, run, status=status, extra=extra)
        finally:
            bus.close()
            if run._store is not None:
                run._store.close()


def open_scrubbing(settings: Settings, host: PluginHost) -> Scrubbing:
    """The run's scrubbing from the installed plugins; with none, no run starts."""
    if (scrubbing := host.hook.open_scrubbing(settings=settings, registry=host.registry)) is None:
        raise InputError("no secret scrubbing is installed: pip install bashgym-scrubbers-secrets")
    return scrubbing  # type: ignore[no-any-return]


def finish(
    recorder: RunJson, host: PluginHost, run: RunContext, *, extra: dict[str, Any], **status: Any
) -> dict[str, Any]:
    """The final run.json, then `on_run_end` (e.g. report.html), then run.json again with
    what those observers added (`artifacts`)."""
    summary = recorder.write(**status, **extra, ended_at=datetime.now(UTC).isoformat())
    try:
        host.hook.on_run_end(summary=summary, run=run)
    except Exception as exc:  # noqa: BLE001 -- the data is written; an observer must not undo it
        run.note(f"on_run_end failed: {type(exc).__name__}: {exc}")
    return recorder.write()


def _extra(engine: Engine, generated: Generated | None) -> dict[str, Any]:
    run = engine.run
    extra = {"scrub": engine.scrubbing.report(), **(generated.summary if generated else {})}
    try:  # a failed run's too (the drops of the rows it finished); a full disk must not
        if engine.dropped:  # cost the run its final status
            write_dropped(run.run_dir, engine.dropped, engine.scrubbing)
    except Exception as exc:  # noqa: BLE001 -- a full disk, or a runner's list of odd rows
        run.note(f"{DROPPED_FILE} could not be written: {getattr(exc, 'strerror', None) or exc}")
    if (run.run_dir / DROPPED_FILE).is_file():
        run.emit(ev.Artifact(name="dropped_rows", path=str(run.run_dir / DROPPED_FILE)))
    return extra


def _plugins(resolved: ResolvedRun) -> dict[str, Any]:
    """Which plugin serves each role: one entry per single role, a list for judges and sinks."""
    out: dict[str, Any] = {}
    for step in resolved.steps():
        one = {"name": step.name, "from": step.registered.plugin}
        out[step.role] = [*out.get(step.role, []), one] if step.role in ("judge", "sink") else one
    return out


def with_run_overrides(settings: Settings, resolved: ResolvedRun) -> Settings:
    """Settings with the run file's plugin tables (`[designer]`, ...; checked in resolve())."""
    update: dict[str, Any] = {}
    for name, table in resolved.spec.tables.items():
        model = type(current := getattr(settings, name, None))
        if not isinstance(current, BaseModel):  # settings loaded without the plugin's tables
            continue
        try:
            update[name] = model.model_validate({**current.model_dump(), **table})
        except ValidationError as exc:
            raise InputError(f"the run's [{name}] table: {explain_validation(exc)}") from None
    return settings.model_copy(update=update) if update else settings


def _as_row(item: Any) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        return trace_to_row(item) if isinstance(item, Trace) else item.model_dump(mode="json")
    return dict(item)


BATCH_ROWS, BATCH_CHARS = 2000, 2 << 20  # a batch: this many rows, or text, whichever first


def source_batches(step: Step, run: RunContext) -> Iterator[pd.DataFrame]:
    """Source output as DataFrames of a bounded size (Traces as trace rows), with progress."""
    import pandas as pd

    out = step.obj.open(step.options, run)
    if isinstance(out, pd.DataFrame):
        run.emit(ev.RowsGenerated(step="source", n=len(out)))
        yield out
        return
    rows: list[dict[str, Any]] = []
    chars = batches = 0
    for item in out:
        rows.append(row := _as_row(item))
        chars += sum(len(v) for v in row.values() if isinstance(v, str))
        if len(rows) % 100 == 0:
            run.emit(ev.RowsGenerated(step="source", n=100))
        if len(rows) >= BATCH_ROWS or chars >= BATCH_CHARS:
            run.emit(ev.RowsGenerated(step="source", n=len(rows) % 100))
            yield _frame(rows)
            rows, chars, batches = [], 0, batches + 1
    run.emit(ev.RowsGenerated(step="source", n=len(rows) % 100))
    if rows or not batches:  # the last rows, or an empty frame for a source that gave none
        yield _frame(rows)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """`rows` as a DataFrame whose trace text stays Python str (object): pandas 3 would copy it
    into Arrow and every reader back out (~0.7 s of CPU for a 250 MB corpus, measured)."""
    import pandas as pd

    if not rows or TRACE_COLUMN not in rows[0]:
        return pd.DataFrame(rows)
    frame = pd.DataFrame([{**row, TRACE_COLUMN: None} for row in rows])  # (the column's place)
    frame[TRACE_COLUMN] = pd.Series([row.get(TRACE_COLUMN) for row in rows], dtype=object)
    return frame


def apply_judges(
    dataset: pd.DataFrame, resolved: ResolvedRun, run: RunContext, dropped_rows: list[DroppedRow]
) -> pd.DataFrame:
    """Keep the rows every judge's `verdicts` keeps; count and collect the others by reason."""
    for judge in resolved.judges:
        verdicts = judge.obj.verdicts(dataset, judge.options, run)
        dropped = verdicts.notna()
        for reason, n in verdicts[dropped].value_counts().items():
            run.emit(ev.RowDropped(by=f"judge {judge.name}", reason=str(reason), n=int(n)))
        for reason, row in zip(verdicts[dropped], dataset[dropped].to_dict("records"), strict=True):
            dropped_rows.append(DroppedRow(f"judge {judge.name}", str(reason), row))
        dataset = dataset[~dropped]
    return dataset.reset_index(drop=True)


def write_dropped(run_dir: Path, dropped: list[DroppedRow], scrubbing: Scrubbing) -> None:
    """Every dropped row, scrubbed, with who dropped it and why: `dropped.jsonl`."""
    import pandas as pd

    frame = pd.DataFrame([{"by": d.by, "reason": d.reason, "row": plain(d.row)} for d in dropped])
    with (run_dir / DROPPED_FILE).open("w", encoding="utf-8") as fh:
        for record in scrubbing.frame(frame).to_dict(orient="records"):
            fh.write(json.dumps(plain(record), default=str) + "\n")


def pipeline_runner(resolved: ResolvedRun) -> str | None:
    """The runner the run's rows go through: the pipeline's, else that of a judge that adds
    columns (source rows then pass through it one for one), else none."""
    adders = [j for j in resolved.judges if type(j.obj).configure is not Judge.configure]
    step = resolved.pipeline or (adders[0] if adders else None)
    return step.obj.runner if step else None  # type: ignore[no-any-return]
