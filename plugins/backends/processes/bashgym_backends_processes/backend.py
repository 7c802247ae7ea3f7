"""The `processes` backend: each generation round in shards on local worker processes.

Why: a DataDesigner run is CPU-bound at a few ms per row (its event loop, pydantic, the HTTP
client), so one process tops out at one core however many requests it has in flight. The
round's rows are split into contiguous shards (`bashgym_shards`: the same split and merge as
the `ray` backend), each a normal runner call in its own folder under the run dir
(`shards/round-R/rows-A-B`): on a worker process with the run's context rebuilt there, and one
in this process, which would otherwise sit idle waiting for them (so `workers` counts it, and
one fewer process is started: its imports and plugin loading, seconds of CPU, are saved).
Every shard's events come back with its result and are emitted here, so events.jsonl, run.json
and the usage tally stay on the driver; rows are merged in seed order.

Agent tasks (`call`) run in this process, as without a backend: they mostly wait on models and
commands, which the engine already overlaps as coroutines, and a process per task would cap
them at `workers` at once (the ray backend measured 1 process x 4 tasks beating 4 x 1 on a
small node).

A worker that dies mid-shard (killed, out of memory) fails the round with one line that says
which shards and how it died (once this process's own shard is done); nothing of theirs is
kept, and the same command resumes.
"""

from __future__ import annotations

import contextlib
import copy
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from bashgym_shards import Blueprint, Outcome, Shard, hand_back, merge, replay, shards
from bashgym_shards.worker import shard_here

from bashgym.contracts import Backend, Generated, RunContext, RunStopped
from bashgym.events import Reported
from bashgym_backends_processes.options import ProcessesOptions
from bashgym_backends_processes.pool import Pool, died

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun, Step


class WorkerDied(RunStopped):
    """A worker process ended while it ran a shard (killed, out of memory, a crash): a cause
    outside the run, so the CLI says it in one line and the same command resumes."""


class ProcessesBackend(Backend[ProcessesOptions]):
    """Runs each generation round in shards on worker processes of this machine."""

    def __init__(self) -> None:
        self._pools: dict[str, Pool | None] = {}  # run dir -> its workers (None: only this)
        self._sections: dict[str, dict[str, Any]] = {}  # run dir -> run.json's `backend`

    @contextlib.contextmanager
    def open(
        self, options: ProcessesOptions, resolved: ResolvedRun, run: RunContext
    ) -> Iterator[None]:
        key = str(run.run_dir)
        processes = options.worker_count()
        pool = Pool(processes - 1, Blueprint.of(run, resolved)) if processes > 1 else None
        self._pools[key] = pool
        self._sections[key] = {"workers": processes, "shards_per_round": []}
        try:
            self._report(run)
            yield
        finally:
            self._pools.pop(key, None)
            self._sections.pop(key, None)
            if pool is not None:
                pool.close()

    def _report(self, run: RunContext) -> None:
        """run.json's `backend` section: how many processes, how each round was split."""
        section = copy.deepcopy(self._sections[str(run.run_dir)])  # this moment's, kept as is
        run.emit(Reported(section="backend", data={"name": "processes", **section}))

    def _pool(self, run: RunContext) -> Pool | None:
        try:
            return self._pools[str(run.run_dir)]
        except KeyError:
            raise RuntimeError("the processes backend was not opened for this run") from None

    def generate(
        self, runner: str, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None,
        n: int, run: RunContext, *, round: int, resume: bool, options: ProcessesOptions,
    ) -> Generated:  # fmt: skip
        """The round in shards (`options.shards`, default one per process): the workers take
        them from the front, one each at a time, this process from the back; each shard's
        events are emitted as it ends, rows merged in seed order. A failed round raises one
        shard's error with every shard's dropped rows on it (`hand_back`)."""
        pool = self._pool(run)
        count = options.shards or options.worker_count()
        parts = shards(runner, pipeline, judges, seed, n, count, round=round, resume=resume)
        self._sections[str(run.run_dir)]["shards_per_round"].append(len(parts))
        self._report(run)
        rounds = _Round(pool, run)
        try:  # a dead worker (or Ctrl-C) stops the round: the finished shards' drops go back
            rounds.queue.extend(parts)
            rounds.feed()
            while rounds.queue:  # this process takes what no worker has started, from the back
                part = rounds.queue.pop()
                rounds.record(part, shard_here(run, part))
                rounds.collect(block=False)
                rounds.feed()
            while rounds.pending:
                rounds.collect(block=True)
        except BaseException as exc:
            hand_back(exc, rounds.done)
            raise
        done = rounds.done
        errors = [done[i].error for i in sorted(done) if done[i].error is not None]
        if errors:
            raise hand_back(errors[0], done)
        return merge([done[i].value for i in sorted(done)])

    async def call(
        self, fn: Callable[..., Any], *args: Any, run: RunContext, options: ProcessesOptions
    ) -> Any:
        """`fn(run, *args)` in this process (see the module docstring): its events are the
        run's own."""
        return await fn(run, *args)


class _Round:
    """One round's shards in flight: those not started yet, those on workers, those done."""

    def __init__(self, pool: Pool | None, run: RunContext) -> None:
        self.pool, self.run = pool, run
        self.queue: deque[Shard] = deque()
        self.pending: dict[Future[Outcome], Shard] = {}
        self.done: dict[int, Outcome] = {}
        self.notes: set[str] = set()

    def feed(self) -> None:
        """Each idle worker a shard from the front of the queue."""
        while self.pool is not None and self.queue and len(self.pending) < self.pool.workers:
            part = self.queue.popleft()
            try:
                self.pending[self.pool.submit(part)] = part
            except BrokenProcessPool:
                raise self._died(part) from None

    def collect(self, *, block: bool) -> None:
        """The workers' finished shards (waiting for one when `block`), their events emitted."""
        finished, _ = wait(self.pending, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for future in finished:
            part = self.pending.pop(future)
            try:
                out = future.result()
            except BrokenProcessPool:
                raise self._died(part) from None
            self.record(part, out)

    def record(self, part: Shard, out: Outcome) -> None:
        self.done[part.index] = out
        replay(out, self.run, self.notes)

    def _died(self, part: Shard) -> WorkerDied:
        """One line: which shards a dead worker took down with it, how it died, what to do."""
        lost = sorted([part, *self.pending.values(), *self.queue], key=lambda p: p.index)
        rows = ", ".join(f"{p.start}-{p.stop}" for p in lost)
        how = died(self.pool.exit_codes()) if self.pool is not None else "it ended abruptly"
        return WorkerDied(
            f"backend processes: a worker process died ({how}) while round {part.round}'s "
            f"shards ran; rows {rows} were not kept (the same command resumes)"
        )


__all__ = ["ProcessesBackend", "WorkerDied"]
