"""Task slots: one long-lived Ray actor per slot of the cluster, each holding a worker process
with the run's plugins loaded.

Why actors, not plain Ray tasks: a fresh worker process pays for importing the plugins and
their libraries (DataDesigner, litellm: seconds, and tens of seconds on a busy machine) on its
first task, and Ray ends idle worker processes between tasks, so plain tasks paid it again and
again (measured: 17-27 s to rebuild, 35 s for a first task, on a loaded 2-core box). A slot
pays it once, when the run opens, all slots in parallel; then each task is a method call on a
slot with room. A slot asks for `task_cpus` (and `task_memory_mb`), so Ray places slots where
there is room; a slot whose process or node dies is restarted and its calls retried
(`max_retries`).

A slot is an async actor: it runs up to `slot_tasks` agent tasks at once as coroutines on its
event loop, as the in-process engine runs them, because agent tasks mostly wait on a model and
one process per task on a node with fewer cores than tasks spends the difference on contention
(measured in bench/ray_backend.py). Shards (a runner's blocking call) run in a thread, one at a
time per slot, so the loop stays free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bashgym_shards import worker
from bashgym_shards.worker import Blueprint, Outcome, Shard

from bashgym_backends_ray.cluster import cluster_cpus, import_ray
from bashgym_backends_ray.options import RayOptions


class Slot:
    """The actor: the worker side of `call` (tasks on its loop) and `shard` (one at a time, in
    a thread). (A slot Ray restarts after its process died loads the plugins again on its first
    call.)"""

    def __init__(self) -> None:
        self._shard_turn: asyncio.Lock | None = None  # made on the actor's loop, on first use

    async def ready(self, bp: Blueprint) -> int:
        return worker.warm(bp)  # blocks the loop: nothing else runs on a slot warming up

    async def call(self, bp: Blueprint, fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
        return await worker.call(bp, fn, args)

    async def shard(self, bp: Blueprint, part: Shard) -> Outcome:
        if self._shard_turn is None:
            self._shard_turn = asyncio.Lock()
        async with self._shard_turn:
            return await asyncio.to_thread(worker.shard, bp, part)


class Slots:
    """The slots of one driver process, for one shape of ask (cpus, memory, retries)."""

    def __init__(self, options: RayOptions) -> None:
        ray = import_ray()
        self.shape = shape_of(options)
        count = max(1, int(cluster_cpus() // options.task_cpus))
        asks: dict[str, Any] = {"num_cpus": options.task_cpus}
        if options.task_memory_mb is not None:
            asks["memory"] = options.task_memory_mb * 1024 * 1024
        actor = ray.remote(Slot).options(
            **asks, max_restarts=options.max_retries, max_task_retries=options.max_retries
        )
        self.actors = [actor.remote() for _ in range(count)]
        self.room = options.slot_tasks  # tasks a slot runs at once
        self.busy: dict[Any, int] = dict.fromkeys(self.actors, 0)  # a slot's tasks running now
        self._free: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def ready(self, bp: Blueprint) -> list[int]:
        """Wait until every slot has `bp`'s plugins loaded (in parallel); their pids."""
        ray = import_ray()
        try:
            return list(ray.get([a.ready.remote(bp) for a in self.actors]))
        except ray.exceptions.RayError as exc:  # e.g. a plugin that does not import there
            first = (str(exc).strip().splitlines() or [""])[-1]
            raise RuntimeError(f"ray: a slot could not load the run's plugins: {first}") from None

    def close(self) -> None:
        ray = import_ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors, self.busy = [], {}

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._free is None or self._loop is not loop:  # each run's tasks: one event loop
            self._free, self._loop = asyncio.Condition(), loop
        return self._free

    async def call(self, bp: Blueprint, fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
        """`fn` on the least busy slot with room (waiting for one); a slot Ray gave up on is
        dropped."""
        free = self._condition()
        async with free:
            await free.wait_for(lambda: self._roomiest() is not None or not self.actors)
            if not self.actors:
                raise RuntimeError("ray: every slot of this run died")
            actor = self._roomiest()
            self.busy[actor] += 1
        lost = False
        try:
            return await actor.call.remote(bp, fn, args)  # type: ignore[no-any-return]
        except import_ray().exceptions.RayActorError:
            lost = True
            raise
        finally:
            async with free:
                if lost and actor in self.busy:
                    self.actors.remove(actor)
                    del self.busy[actor]
                elif actor in self.busy:
                    self.busy[actor] -= 1
                free.notify_all()

    def _roomiest(self) -> Any:
        """The slot running the fewest tasks, if it has room for one more."""
        actor = min(self.actors, key=self.busy.__getitem__, default=None)
        return actor if actor is not None and self.busy[actor] < self.room else None

    def shards(self, bp: Blueprint, parts: list[Shard]) -> list[Any]:
        """Each shard on a slot, round robin (a slot runs its shards one at a time)."""
        return [self.actors[i % len(self.actors)].shard.remote(bp, p) for i, p in enumerate(parts)]


_POOLS: dict[str, Slots] = {}


def shape_of(options: RayOptions) -> tuple[Any, ...]:
    """What a slot asks of Ray: slots of another shape are other actors."""
    return (options.task_cpus, options.task_memory_mb, options.max_retries)


def slots_for(options: RayOptions, bp: Blueprint) -> Slots:
    """This process's slots for `options`' ask, made (and warmed for `bp`) on first use; a
    different ask replaces them (their CPUs are the cluster's)."""
    pool = _POOLS.get("current")
    if pool is not None and pool.shape != shape_of(options):
        pool.close()
        pool = None
    if pool is None:
        pool = _POOLS["current"] = Slots(options)
    pool.room = options.slot_tasks  # a run's own, on slots an earlier run made
    pool.ready(bp)
    return pool


def forget() -> None:
    """Ray is shut down: the slots went with it."""
    _POOLS.clear()
