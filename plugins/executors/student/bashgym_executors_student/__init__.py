"""Executor student: BashGym's own small tool loop over any model alias (embedded, vLLM,
OpenAI-compatible, litellm), its tools run through the task's environment."""

from __future__ import annotations

import asyncio
from typing import Any

from bashgym_models_providers import describe_failure

from bashgym import hookimpl
from bashgym.contracts import BudgetExceeded, Executor, InputError, TaskContext
from bashgym.records import Task, WorkerResult
from bashgym_executors_student.agent import Ending, StudentAgent
from bashgym_executors_student.options import StudentOptions

__all__ = ["Student", "StudentAgent", "StudentOptions"]

MAX_MARGIN_S = 2.0


def own_timeout(ctx: TaskContext) -> float | None:
    """Stop a little before the deadline, so the Trace until then is kept: the kernel's
    run_task cancels at the deadline itself and would keep none of it."""
    left = ctx.remaining_s()
    return None if left is None else max(left - min(MAX_MARGIN_S, left * 0.1), 0.0)


class Student(Executor[StudentOptions]):
    """BashGym's own tool loop (read/write/edit files, list, search, run commands)."""

    name = "student"

    async def run(self, task: Task, options: StudentOptions, ctx: TaskContext) -> WorkerResult:
        try:
            agent = StudentAgent(task, options, ctx)
        except InputError as exc:  # an alias that cannot be used: a missing key or endpoint
            return WorkerResult.failed(task, self.name, "error", str(exc))
        try:
            async with asyncio.timeout(own_timeout(ctx)):
                ending = await agent.run()
        except TimeoutError:
            limit = f"{task.timeout_s:g} s" if task.timeout_s else "the run's task timeout"
            ending = Ending("timeout", f"deadline passed ({limit})", "timeout")
        except BudgetExceeded as exc:
            ending = Ending("budget", str(exc), "max_budget")
        except Exception as exc:  # noqa: BLE001 -- a failed model call ends the task, Trace kept
            timeout = float(agent.model.params.get("timeout") or 600)
            ending = Ending("error", describe_failure(exc, agent.model, timeout), "model_error")
        return agent.result(ending)


@hookimpl
def register_executors(register: Any) -> None:
    register("student", Student())
