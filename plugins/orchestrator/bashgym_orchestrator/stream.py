"""Worker traces reach the run's sinks as the job goes, not only at its end.

Each time an attempt is stored or a task's merge is decided, the streamed sinks
(`stream_sinks`: sinks that rewrite local files atomically, nemo-jsonl and parquet by default)
are rewritten with every row the job's run store holds so far and the plan's row. So a job
killed at any point leaves complete files of what had ended, and a resumed job rewrites them
from the store: no row is ever written twice. Rewriting the whole set rather than appending
keeps each sink's own guarantees (nemo-jsonl's split by record id, files renamed into place)
with no append API in the kernel's Sink; a job's few hundred rows at most make that cheap
(`timings` in run.json's `streamed_sinks` says how cheap).

Counts stay true: a rewrite runs the sink with a private tally (the engine's write at the end
counts drops and lines once, as for any run); on the run's bus each rewrite says what each
sink holds now (`sink_wrote`, so run.json's `kept_by_sink` is right mid-job and after a kill,
and `streamed_sinks`), and `traces_ingested`. Rows are scrubbed before any sink sees them,
each row once per version of it (an attempt's row changes once: when its merge is decided).
Sinks that do more than write a file (hf-hub uploads) write once, at the end, as before; so do
all sinks of a run with judges or a pipeline (those decide which rows are kept).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bashgym.contracts import RunContext, Written
from bashgym.events import Reported, SinkWrote, Tally
from bashgym.text import one_line
from bashgym_orchestrator.events import TracesIngested
from bashgym_orchestrator.job import Job

FORMAT = "traces"  # what the orchestrator source's rows are (its output_format)
SECTION = "streamed_sinks"


@dataclass(frozen=True)
class Streamed:
    """A sink of the run that is rewritten as the job goes."""

    name: str
    obj: Any
    options: Any


@dataclass
class SinkStream:
    """Rewrites the streamed sinks with the job's rows so far; `poke()` after each change,
    `drain()` to wait for the last rewrite. One rewrite at a time; pokes while one runs make
    one more, not one each."""

    job: Job
    run: RunContext
    sinks: list[Streamed]
    writes: int = 0
    seconds: float = 0.0
    _dirty: bool = False
    _task: asyncio.Task[None] | None = None
    _scrubbed: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _plan: dict[str, Any] | None = None
    _held: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of_run(cls, job: Job, run: RunContext, names: list[str]) -> SinkStream | None:
        """The stream of the run's sinks named in `names` (its run.toml says which sinks it
        has), or None when none streams."""
        from bashgym_cli.runs import load_run_file

        try:
            spec = load_run_file(run.run_dir / "run.toml")  # as the engine wrote it
        except ValueError as exc:
            run.note(f"the sinks write at the job's end: run.toml unreadable ({one_line(exc)})")
            return None
        wanted = [s for s in spec.sinks if s.plugin in names]
        if not wanted or run.registry is None:
            return None
        if spec.judges or spec.pipeline:
            run.note("the sinks write at the job's end: the run's judges or pipeline choose rows")
            return None
        sinks = []
        for step in wanted:
            registered = run.registry.get("sinks", step.plugin)
            try:
                options = registered.obj.Options.model_validate(step.options)
            except ValueError as exc:
                run.note(f"sink {step.plugin} writes at the job's end: {one_line(exc)}")
                continue
            sinks.append(Streamed(step.plugin, registered.obj, options))
        return cls(job, run, sinks) if sinks else None

    def poke(self) -> None:
        """The job's rows changed: rewrite the sinks soon (on the running event loop)."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="sink-stream")

    async def drain(self) -> None:
        """Wait until the sinks hold every row stored before this call."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _loop(self) -> None:
        while self._dirty and self.sinks:
            self._dirty = False
            try:
                await self._rewrite()
            except Exception as exc:  # noqa: BLE001 -- the job goes on; the end's write is whole
                self.sinks.clear()
                self.run.note(
                    f"writing the sinks as the job goes stopped ({one_line(exc)}); they write "
                    "at the job's end"
                )

    async def _rewrite(self) -> None:
        from bashgym_orchestrator.source import plan_row_of, stored_rows

        started = time.perf_counter()
        rows = stored_rows(self.job, self.run.store)  # on the loop's thread: the store's
        if self._plan is None:
            self._plan = await asyncio.to_thread(plan_row_of, self.job)
        frame = await asyncio.to_thread(self._frame, rows)
        written: dict[str, Written] = {}
        for sink in list(self.sinks):
            try:
                written[sink.name], self._held[sink.name] = await asyncio.to_thread(
                    self._write, sink, frame
                )
            except Exception as exc:  # noqa: BLE001 -- the end's write says it again, loudly
                self.sinks.remove(sink)
                self.run.note(
                    f"sink {sink.name}: writing as the job goes failed ({one_line(exc)}); "
                    "it writes at the job's end"
                )
        self.writes += 1
        self.seconds += time.perf_counter() - started
        for name, done in written.items():
            paths = [str(p) for p in done.paths]
            self.run.emit(SinkWrote(sink=name, rows=done.rows, paths=paths))
        self.run.emit(TracesIngested(job=self.job.name, traces=len(rows), plan_rows=1))
        self.run.emit(Reported(section=SECTION, data=self.report()))

    def _frame(self, rows: list[tuple[tuple[str, str], dict[str, Any]]]) -> pd.DataFrame:
        """Every row scrubbed (a row already scrubbed in this version is not scrubbed again:
        the scrubber's counts and time), in the order the engine's final write has them."""
        fresh = [(key, row) for key, row in rows if key not in self._scrubbed]
        if fresh:
            clean = self.run.scrub_frame(pd.DataFrame([row for _, row in fresh]))
            for (key, _), row in zip(fresh, clean.to_dict(orient="records"), strict=True):
                self._scrubbed[key] = row
        if self._plan is not None and ("plan", "") not in self._scrubbed:
            plan = self.run.scrub_frame(pd.DataFrame([self._plan]))
            self._scrubbed[("plan", "")] = plan.to_dict(orient="records")[0]
        keep = {key for key, _ in rows} | {("plan", "")}
        self._scrubbed = {k: v for k, v in self._scrubbed.items() if k in keep}
        ordered = [self._scrubbed[key] for key, _ in rows] + [self._scrubbed[("plan", "")]]
        return pd.DataFrame(ordered)

    def _write(self, sink: Streamed, frame: pd.DataFrame) -> tuple[Written, dict[str, Any]]:
        """One sink rewritten, its drops and counts kept apart (the end's write counts them)."""
        quiet = dataclasses.replace(self.run, bus=None, tally=Tally())
        done = sink.obj.write(frame, sink.options, quiet, FORMAT)
        if not isinstance(done, Written):
            raise TypeError(f"sink {sink.name!r} must return bashgym.contracts.Written")
        held = {"rows": done.rows, "counts": dict(quiet.tally.counts)}
        if quiet.tally.dropped:
            held["dropped"] = dict(quiet.tally.dropped)
        return done, held

    def report(self) -> dict[str, Any]:
        """run.json's `streamed_sinks`: what each sink holds after the latest rewrite."""
        return {
            "sinks": dict(self._held),
            "rewrites": self.writes,
            "seconds": round(self.seconds, 3),
        }


def row_key(item_key: str, task: Any) -> tuple[str, str]:
    """An attempt row's version: its attempt and what its task's merge said (the only part
    of the row that changes after it is stored)."""
    if task is None:
        return item_key, ""
    return item_key, json.dumps([task.state, task.result], sort_keys=True, default=str)


__all__ = ["SinkStream", "Streamed", "row_key"]
