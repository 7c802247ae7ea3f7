"""Executor student: BashGym's own small tool loop over any model alias (embedded, vLLM,
OpenAI-compatible, litellm), its tools run through the task's environment."""

from __future__ import annotations

import asyncio
from typing import Any

from bashgym import hookimpl
from bashgym.contracts import (
    BudgetExceeded,
    Executor,
    InputError,
    ModelCallError,
    RunContext,
    TaskContext,
)
from bashgym.records import Task, WorkerResult
from bashgym_executors_student.agent import Ending, StudentAgent
from bashgym_executors_student.options import StudentOptions

__all__ = ["Student", "StudentAgent", "StudentOptions"]

MAX_MARGIN_S = 2.0
CHECK_TIMEOUT_S = 30.0  # the preflight's one request, unless the alias sets `timeout`


def own_timeout(ctx: TaskContext) -> float | None:
    """Stop a little before the deadline, so the Trace until then is kept: the kernel's
    run_task cancels at the deadline itself and would keep none of it."""
    left = ctx.remaining_s()
    return None if left is None else max(left - min(MAX_MARGIN_S, left * 0.1), 0.0)


class Student(Executor[StudentOptions]):
    """BashGym's own tool loop (read/write/edit files, list, search, run commands)."""

    name = "student"

    def preflight(self, options: StudentOptions, run: RunContext) -> None:
        """Before the first task: one tiny request through the alias (one try), as pipelines
        do, so a model that does not answer is one line (InputError, exit 2) and no task starts.
        A model served here (embedded) already answered when it started. Its tokens are charged
        to the run (`run.model`)."""
        alias = options.model_alias
        model = run.model(alias)  # starts a served model now: one that cannot start fails here
        if model.served:
            return
        timeout = float(model.params.get("timeout") or CHECK_TIMEOUT_S)
        hello = [{"role": "user", "content": "Reply with OK."}]
        try:
            asyncio.run(
                model.acomplete(hello, params={"max_tokens": 8, "timeout": timeout}, retries=0)
            )
        except ModelCallError as exc:  # its reason names the alias already: said once here
            cause = exc.reason.removeprefix(f"model {alias}: ")
            raise InputError(f"model alias {alias!r} does not answer: {cause}") from None

    async def run(self, task: Task, options: StudentOptions, ctx: TaskContext) -> WorkerResult:
        try:
            agent = StudentAgent(task, options, ctx)
        except InputError as exc:  # an alias that cannot be used: a missing key or endpoint
            return WorkerResult.failed(task, self.name, "error", str(exc))
        try:
            async with asyncio.timeout(own_timeout(ctx)):
                ending = await agent.run()
        except TimeoutError:
            ending = Ending("timeout", "deadline passed (the run's task timeout)", "timeout")
        except BudgetExceeded as exc:
            ending = Ending("budget", str(exc), "max_budget")
        except ModelCallError as exc:  # retried as far as it made sense: the cause, in a line
            ending = Ending("error", exc.reason, "model_error")
        except InputError as exc:  # the alias cannot be called as configured (a missing key)
            ending = Ending("error", str(exc), "model_error")
        except Exception as exc:  # noqa: BLE001 -- a failed model call ends the task, Trace kept
            cause = " ".join(f"{type(exc).__name__}: {exc}".split())
            ending = Ending("error", f"model {agent.model.alias}: {cause}", "model_error")
        return agent.result(ending)


@hookimpl
def register_executors(register: Any) -> None:
    register("student", Student())
