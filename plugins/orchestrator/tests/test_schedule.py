"""The scheduler: start order (priority, then longest remaining path), dependencies, failures
blocking every dependent with the reason, cancel, requeue, replay after a crash, and its cost."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import pytest
from bashgym_orchestrator.plan import PlannedTask
from bashgym_orchestrator.schedule import Scheduler, SchedulerError, State


@dataclass
class T:
    id: str
    depends_on: list[str] = field(default_factory=list)
    priority: str = "normal"
    estimated_turns: int = 1


def test_ready_order_is_priority_then_longest_remaining_path():
    s = Scheduler(
        [
            T("short", estimated_turns=1),
            T("long", estimated_turns=2),
            T("tail", ["long"], estimated_turns=9),
            T("urgent", priority="critical", estimated_turns=1),
            T("low", priority="low", estimated_turns=50),
            T("tie-a", estimated_turns=3),
            T("tie-b", estimated_turns=3),
        ]
    )
    assert s.ready() == ["urgent", "long", "tie-a", "tie-b", "short", "low"]
    assert s.ready(limit=2) == ["urgent", "long"]
    assert s.remaining("long") == 11 and s.critical_turns == 50
    assert s.peek() == "urgent"
    assert s.take(2) == ["urgent", "long"]
    assert s.ready() == ["tie-a", "tie-b", "short", "low"]
    assert s.succeed("long") == ["tail"]
    assert s.ready()[0] == "tail"


def test_a_task_is_ready_only_when_every_dependency_succeeded():
    s = Scheduler([T("a"), T("b"), T("c", ["a", "b"])])
    s.take(2)
    assert s.succeed("a") == [] and s.state("c") is State.PENDING
    assert s.succeed("b") == ["c"] and s.state("c") is State.READY


def test_a_failure_blocks_every_transitive_dependent_with_the_reason():
    s = Scheduler([T("a"), T("b", ["a"]), T("c", ["b"]), T("d", ["a", "x"]), T("x"), T("e")])
    assert s.take(3) == ["a", "x", "e"]
    assert sorted(s.fail("a", "tests failed twice")) == ["b", "c", "d"]
    for tid in ("b", "c", "d"):
        assert s.state(tid) is State.BLOCKED
        assert s.reason(tid) == "depends on 'a', which failed: tests failed twice"
    assert s.reason("a") == "tests failed twice"
    s.succeed("x")  # d stays blocked: one of its dependencies failed
    assert s.state("d") is State.BLOCKED and s.peek() is None
    assert not s.done
    s.succeed("e")
    assert s.done
    assert s.counts() == {
        "pending": 0,
        "ready": 0,
        "running": 0,
        "succeeded": 2,
        "failed": 1,
        "blocked": 3,
        "cancelled": 0,
    }


def test_cancel_one_task_or_the_rest_of_the_job():
    s = Scheduler([T("a"), T("b", ["a"]), T("c"), T("d"), T("e", ["d"])])
    assert s.take(1) == ["a"]
    assert s.cancel("c", "over budget") == ["c"]
    assert s.peek() == "d"  # the cancelled one is skipped
    assert s.cancel(reason="cancelled by the user") == ["b", "d", "e"]
    assert s.reason("e") == "cancelled by the user"
    assert s.running == 1 and not s.done
    assert s.cancel("a", "stopped") == ["a"]
    assert s.done
    with pytest.raises(SchedulerError, match="already cancelled"):
        s.cancel("a")


def test_cancelling_a_running_task_blocks_its_dependents():
    s = Scheduler([T("a"), T("b", ["a"])])
    s.start("a")
    assert s.cancel("a", "killed") == ["a", "b"]
    assert s.reason("b") == "depends on 'a', which was cancelled: killed"


def test_requeue_puts_a_running_task_back_once():
    s = Scheduler([T("a", estimated_turns=5), T("b")])
    s.start("b")  # not the top: its heap entry stays until it reaches it
    s.requeue("b")
    assert s.ready() == ["a", "b"]
    assert s.take(5) == ["a", "b"]
    assert s.ready() == [] and s.peek() is None
    with pytest.raises(SchedulerError, match="'b' is running, not ready"):
        s.start("b")


def test_illegal_transitions_say_why():
    s = Scheduler([T("a"), T("b", ["a"])])
    with pytest.raises(SchedulerError, match="task 'b' is pending, not ready"):
        s.start("b")
    with pytest.raises(SchedulerError, match="task 'a' is ready, not running"):
        s.succeed("a")
    with pytest.raises(SchedulerError, match="no task 'zz'"):
        s.fail("zz")


def test_a_dag_is_required():
    with pytest.raises(SchedulerError, match="dependency cycle"):
        Scheduler([T("a", ["b"]), T("b", ["a"]), T("c")])
    with pytest.raises(SchedulerError, match="'a' depends on 'nope'"):
        Scheduler([T("a", ["nope"])])
    with pytest.raises(SchedulerError, match="not unique"):
        Scheduler([T("a"), T("a")])


def test_replay_restores_a_job_after_a_crash():
    tasks = [T("a"), T("b", ["a"]), T("c", ["b"]), T("d"), T("e", ["d"]), T("f"), T("g")]
    s = Scheduler(tasks)
    s.replay(
        {"c": "running", "b": "succeeded", "a": "succeeded", "d": "failed", "f": "cancelled"},
        {"d": "boom"},
    )
    assert s.states() == {
        "a": State.SUCCEEDED,
        "b": State.SUCCEEDED,
        "c": State.READY,  # was running when the job died: it starts again
        "d": State.FAILED,
        "e": State.BLOCKED,
        "f": State.CANCELLED,
        "g": State.READY,
    }
    assert s.reason("e") == "depends on 'd', which failed: boom"
    with pytest.raises(SchedulerError, match="recorded succeeded but its dependencies"):
        Scheduler(tasks).replay({"b": "succeeded"})


def test_planned_tasks_schedule_as_they_are():
    tasks = [
        PlannedTask(id="a", title="a", prompt="p", estimated_turns=2),
        PlannedTask(id="b", title="b", prompt="p", priority="high", depends_on=["a", "a"]),
    ]
    s = Scheduler(tasks)
    assert s.take(1) == ["a"] and s.succeed("a") == ["b"]


def random_dag(n: int, seed: int) -> list[T]:
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        deps = {f"t{rng.randrange(i)}" for _ in range(rng.randint(0, 3))} if i else set()
        tasks.append(
            T(
                f"t{i}",
                sorted(deps),
                rng.choice(["critical", "high", "normal", "normal", "low"]),
                rng.randint(1, 20),
            )
        )
    return tasks


def test_every_task_ends_exactly_once_on_a_random_dag():
    tasks = random_dag(2000, seed=7)
    s = Scheduler(tasks)
    rng = random.Random(1)
    ended: list[str] = []
    running: list[str] = []
    deps = {t.id: t.depends_on for t in tasks}
    while not s.done:
        running += s.take(8 - len(running))
        tid = running.pop(rng.randrange(len(running)))
        assert all(s.state(d) is State.SUCCEEDED for d in deps[tid])
        if rng.random() < 0.01:
            ended += [tid, *s.fail(tid, "x")]
        else:
            s.succeed(tid)
            ended.append(tid)
    assert sorted(ended) == sorted(t.id for t in tasks)
    assert sum(s.counts().values()) == len(tasks)


def test_ten_thousand_tasks_schedule_well_under_a_millisecond_each():
    tasks = random_dag(10_000, seed=3)
    started = time.perf_counter()
    s = Scheduler(tasks)
    while not s.done:
        for tid in s.take(16):
            s.succeed(tid)
    per_task = (time.perf_counter() - started) / len(tasks)
    assert per_task < 1e-3  # ~10 µs here; the bench reports it beside the makespan
