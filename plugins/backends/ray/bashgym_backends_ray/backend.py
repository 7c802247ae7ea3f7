"""The `ray` backend: the run's generation rounds in shards and its agent tasks on Ray.

The driver (the `bashgym run` process) keeps the run: its store, events.jsonl and run.json.
Each shard or task runs on a task slot (`slots.py`: a Ray actor placed where there is room for
`task_cpus` and `task_memory_mb`) in a context rebuilt there (`bashgym_shards.worker`); its
result and events come back and are emitted here, so every count, drop reason and token is
tallied once, on the driver. A slot lost mid-task is restarted and the task retried by Ray
(`max_retries`, system failures only): the driver records the one result that comes back, so a
task is never completed twice.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bashgym_shards import Blueprint, Outcome, hand_back, merge, replay, shards

from bashgym.contracts import Backend, Generated, RunContext
from bashgym.events import Reported
from bashgym_backends_ray import cluster
from bashgym_backends_ray.options import RayOptions
from bashgym_backends_ray.slots import Slots, forget, slots_for

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun, Step


class RayBackend(Backend[RayOptions]):
    """Runs agent tasks and generation shards on a Ray cluster (or a local Ray instance)."""

    def __init__(self) -> None:
        self._runs: dict[str, Blueprint] = {}  # run dir -> how its workers rebuild it
        self._sections: dict[str, dict[str, Any]] = {}  # run dir -> run.json's `backend`
        self._pools: dict[str, Slots] = {}  # run dir -> its task slots

    @contextlib.contextmanager
    def open(self, options: RayOptions, resolved: ResolvedRun, run: RunContext) -> Iterator[None]:
        t0 = time.perf_counter()
        started = cluster.connect(options)
        key = str(run.run_dir)
        bp = self._runs[key] = Blueprint.of(run, resolved)
        where = options.address or ("local instance" if started else "this process's Ray")
        try:
            pool = self._pools[key] = slots_for(options, bp)  # started, the plugins loaded
            self._sections[key] = {
                "where": where, "slots": len(pool.actors), "shards_per_round": [],
                "startup_s": round(time.perf_counter() - t0, 3), "tasks": 0,
                "task_worker_s": 0.0, "task_round_trip_s": 0.0,
            }  # fmt: skip
            self._report(run)
            yield
            if self._sections[key]["tasks"]:
                self._report(run)  # with the tasks' time on the workers and in round trips
        finally:
            self._runs.pop(key, None)
            self._sections.pop(key, None)
            self._pools.pop(key, None)
            if started:
                forget()
                cluster.import_ray().shutdown()

    def _report(self, run: RunContext) -> None:
        """run.json's `backend` section: where the work ran and how each round was split."""
        data = {"name": "ray", "nodes": cluster.alive_nodes(), "cpus": cluster.cluster_cpus()}
        section = copy.deepcopy(self._sections[str(run.run_dir)])  # this moment's, kept as is
        run.emit(Reported(section="backend", data={**data, **section}))

    def _blueprint(self, run: RunContext) -> Blueprint:
        try:
            return self._runs[str(run.run_dir)]
        except KeyError:
            raise RuntimeError("the ray backend was not opened for this run") from None

    def generate(
        self, runner: str, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None,
        n: int, run: RunContext, *, round: int, resume: bool, options: RayOptions,
    ) -> Generated:  # fmt: skip
        """The round in shards (`options.shards`, default one per slot), each shard's events
        emitted as it ends, rows merged in seed order. A failed round raises one shard's error
        with every shard's dropped rows on it (`hand_back`)."""
        ray = cluster.import_ray()
        bp = self._blueprint(run)
        pool = self._pools[str(run.run_dir)]
        count = options.shards or len(pool.actors)
        parts = shards(runner, pipeline, judges, seed, n, count, round=round, resume=resume)
        pending = dict(zip(pool.shards(bp, parts), range(len(parts)), strict=True))
        self._sections[str(run.run_dir)]["shards_per_round"].append(len(parts))
        self._report(run)
        done: dict[int, Outcome] = {}
        notes: set[str] = set()
        try:  # a lost task (or Ctrl-C) stops the round: the finished shards' drops go back
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    out = _fetch(ray, ref)
                    done[pending.pop(ref)] = out
                    replay(out, run, notes)
        except BaseException as exc:
            hand_back(exc, done)
            raise
        errors = [done[i].error for i in sorted(done) if done[i].error is not None]
        if errors:
            raise hand_back(errors[0], done)
        return merge([done[i].value for i in sorted(done)])

    async def call(
        self, fn: Callable[..., Any], *args: Any, run: RunContext, options: RayOptions
    ) -> Any:
        """`fn(worker_run, *args)` on the least busy slot with room (`Slots.call`)."""
        ray = cluster.import_ray()
        bp = self._blueprint(run)
        started = time.perf_counter()
        try:
            out = await self._pools[str(run.run_dir)].call(bp, fn, args)
        except ray.exceptions.RayError as exc:
            raise _lost(exc, options) from None
        section = self._sections[str(run.run_dir)]
        section["tasks"] += 1
        section["task_worker_s"] = round(section["task_worker_s"] + out.seconds, 4)
        took = time.perf_counter() - started  # waiting for a free slot included
        section["task_round_trip_s"] = round(section["task_round_trip_s"] + took, 4)
        replay(out, run, set())
        if out.error is not None:
            raise out.error
        return out.value


def _fetch(ray: Any, ref: Any) -> Outcome:
    try:
        return ray.get(ref)  # type: ignore[no-any-return]
    except ray.exceptions.RayError as exc:
        raise _lost(exc, None) from None


def _lost(exc: BaseException, options: RayOptions | None) -> RuntimeError:
    """A task Ray could not finish (its worker or node died more often than it retries)."""
    tries = "" if options is None else f" after {options.max_retries + 1} tries"
    first = (str(exc).strip().splitlines() or [""])[0]
    return RuntimeError(f"ray lost the task{tries}: {type(exc).__name__}: {first}"[:300])
