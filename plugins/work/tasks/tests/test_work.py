"""run_task: every way a task can end is a status with a reason, never an exception; and
work_through processes each store item exactly once, N at a time."""

from __future__ import annotations

import asyncio

import pytest
from bashgym_sandbox import Workspace
from bashgym_testing import ScriptedExecutor
from bashgym_work_tasks import run_task, work_through

from bashgym.contracts import Budget, EnvironmentSession, RunContext, TaskContext
from bashgym.records import Task, Usage
from bashgym.settings import Settings
from bashgym.store import RunStore


class NoCommands(EnvironmentSession):
    async def run(self, command, *, timeout=None):
        raise AssertionError("not used")

    def argv(self, argv):
        return list(argv), {}


def context(tmp_path, **kwargs) -> TaskContext:
    run = RunContext(run_dir=tmp_path, settings=Settings())
    return TaskContext(run=run, env=NoCommands(Workspace(tmp_path)), **kwargs)


def run(executor, ctx, task=None):
    task = task or Task(id="t1", prompt="do it")
    return asyncio.run(run_task(executor, "scripted", task, executor.Options(), ctx))


def test_success_with_usage_in_the_trace_and_the_run(tmp_path):
    executor = ScriptedExecutor().enqueue(
        "done", usage=Usage(input_tokens=7, output_tokens=3), cost_usd=0.25, write={"a.txt": "x"}
    )
    ctx = context(tmp_path)
    result = run(executor, ctx)
    assert result.status == "success" and result.usage.input_tokens == 7
    assert result.cost_usd == 0.25 and result.duration_s is not None
    assert (tmp_path / "a.txt").read_text() == "x"
    assert ctx.run.tally.tasks == {"success": 1}
    assert ctx.run.usage.input_tokens == 7 and ctx.run.cost_usd == 0.25


@pytest.mark.parametrize(
    ("script", "kwargs", "status", "reason"),
    [
        ({"delay": 5}, {}, "timeout", "deadline passed"),
        ({"cost_usd": 2.0}, {"budget": Budget(1.0)}, "budget", "of a $1 budget"),
        ({"raises": RuntimeError("kaput")}, {}, "error", "RuntimeError: kaput"),
        ({"status": "denied", "reason": "edits refused"}, {}, "denied", "edits refused"),
    ],
)
def test_every_failure_is_a_status(tmp_path, script, kwargs, status, reason):
    executor = ScriptedExecutor().enqueue(**script)
    ctx = context(tmp_path, **kwargs)
    if status == "timeout":
        import time

        ctx.deadline = time.monotonic() + 0.2
    result = run(executor, ctx)
    assert result.status == status and reason in (result.reason or "")
    assert result.trace.messages[0].content == "do it"
    assert ctx.run.tally.tasks == {status: 1}


def test_a_budget_charge_counts_against_its_parent_too(tmp_path):
    parent = Budget(1.0)
    first, second = Budget(None, parent=parent), Budget(None, parent=parent)
    first.charge(0.6)
    with pytest.raises(Exception, match=r"\$1 budget"):
        second.charge(0.6)
    assert parent.left_usd == 0.0


def test_cancellation_is_not_swallowed(tmp_path):
    executor = ScriptedExecutor().enqueue(delay=10)

    async def main() -> None:
        ctx = context(tmp_path)
        job = asyncio.create_task(
            run_task(executor, "s", Task(id="t", prompt="p"), executor.Options(), ctx)
        )
        await asyncio.sleep(0.1)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())


def test_work_through_processes_each_item_once_at_the_given_concurrency(tmp_path):
    store = RunStore(tmp_path / "state.db")
    store.add("items", [str(i) for i in range(12)])
    running, peak, seen = 0, 0, []

    async def worker(item):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        seen.append(item.key)
        if item.key == "5":
            raise ValueError("bad item")
        return {"double": int(item.key) * 2}

    asyncio.run(work_through(store, "items", worker, concurrency=4))
    assert sorted(seen, key=int) == [str(i) for i in range(12)]
    assert peak == 4
    assert store.counts("items") == {"done": 11, "failed": 1}
    assert store.get("items", "5").error == "ValueError: bad item"
    assert store.get("items", "3").result == {"double": 6}
