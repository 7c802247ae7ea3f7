"""Running work: one Task through an executor, and many items through the run store.

`run_task` is how every executor is called (this plugin's stage, and any plugin that runs
tasks, e.g. an orchestrator): it holds the deadline (asyncio timeout), turns a budget overrun
or a crash into a WorkerResult status, and emits task events — so every executor reports the
same way and none can take a run down. A caller that keeps results announces the end itself,
once kept (see the stage): TaskFinished in events.jsonl then means the result is stored.
`work_through` claims store items `concurrency` at a time until none is left: finished items
stay done across a crash, and the items in flight are claimable again once their owner is gone
(exactly-once, with resume).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bashgym.contracts import BudgetExceeded, Executor, TaskContext
from bashgym.events import TaskFinished, TaskStarted
from bashgym.records import Task, WorkerResult
from bashgym.store import Item, RunStore
from bashgym.text import one_line


async def run_task(
    executor: Executor[Any],
    name: str,
    task: Task,
    options: Any,
    ctx: TaskContext,
    *,
    announce: bool = True,
) -> WorkerResult:
    """Run `task` within `ctx.deadline`; never raises but for cancellation.

    `announce=False` leaves the TaskFinished event to the caller, to emit (`finished(result)`)
    once the result is kept: a task said to be finished is then one a kill cannot run again.
    """
    ctx.task_id = task.id
    ctx.emit(TaskStarted(task_id=task.id, executor=name))
    started = time.monotonic()
    left = ctx.remaining_s()
    try:  # a grace period past the deadline lets an executor stop itself and keep its Trace
        async with asyncio.timeout(None if left is None else left + min(5.0, 0.1 * left + 1)):
            result = await executor.run(task, options, ctx)
    except TimeoutError:
        limit = f"{left:.3g} s" if left is not None else "the deadline"
        result = WorkerResult.failed(task, name, "timeout", f"deadline passed ({limit})")
    except BudgetExceeded as exc:
        result = WorkerResult.failed(task, name, "budget", str(exc))
    except Exception as exc:  # noqa: BLE001 -- an executor bug is a task status, not a crash
        result = WorkerResult.failed(task, name, "error", one_line(exc))
    if result.duration_s is None:
        result = result.model_copy(update={"duration_s": round(time.monotonic() - started, 3)})
    if announce:
        ctx.emit(finished(result))
    return result


def finished(result: WorkerResult) -> TaskFinished:
    """The event that says `result`'s task is over."""
    return TaskFinished(
        task_id=result.task_id,
        status=result.status,
        reason=result.reason,
        duration_s=result.duration_s,
    )


async def work_through(
    store: RunStore,
    namespace: str,
    worker: Callable[[Item], Awaitable[Any]],
    *,
    concurrency: int = 1,
    keys: set[str] | None = None,
) -> None:
    """Claim and process `namespace`'s items (only `keys`, when given) until none is
    claimable, `concurrency` at once.

    The worker's return value completes the item (its `result`); an exception fails it with
    the error as one line. A worker may complete or fail its item itself (`store.complete`,
    `store.fail`), e.g. to do more once the result is kept: its return value is then ignored.
    Cancellation leaves the items in flight `running`: a later run claims them again once this
    process is gone.
    """

    def claim() -> Item | None:
        if keys is None:
            return store.claim(namespace)
        pending = {i.key for i in store.items(namespace) if i.state in ("pending", "running")}
        return next(filter(None, (store.claim(namespace, k) for k in sorted(pending & keys))), None)

    async def lane() -> None:
        while (item := claim()) is not None:
            try:
                result = await worker(item)
            except Exception as exc:  # noqa: BLE001 -- recorded on the item, the rest goes on
                store.fail(namespace, item.key, one_line(exc))
            else:
                store.complete(namespace, item.key, result)

    await asyncio.gather(*(lane() for _ in range(max(concurrency, 1))))
