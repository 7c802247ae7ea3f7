"""Executor student: BashGym's own small tool loop over any model alias (embedded, vLLM,
OpenAI-compatible, litellm), its tools run through the task's environment."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from bashgym_models_providers import Health, ModelCallError, describe_failure

from bashgym import hookimpl
from bashgym.contracts import BudgetExceeded, Executor, InputError, RunContext, TaskContext
from bashgym.events import UsageCharged
from bashgym.records import Task, Usage, WorkerResult
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

    def __init__(self) -> None:
        # One Health per run (its model session): an endpoint that gave up on one task is
        # tried once, not through a full backoff, by the next.
        self._health: weakref.WeakKeyDictionary[Any, Health] = weakref.WeakKeyDictionary()

    def preflight(self, options: StudentOptions, run: RunContext) -> None:
        """Before the first task: one tiny request through the alias, as pipelines do, so a
        model that does not answer is one line (InputError, exit 2) and no task starts. A model
        served here (embedded) already answered when it started. Its tokens are counted."""
        models = run.models
        assert models is not None, "the engine opens a model session for every run"
        alias = options.model_alias
        if models.is_served(alias):
            models.resolve(alias)  # start it now: a server that cannot start fails here
            return
        result = models.check(alias)
        if not result.ok:
            raise InputError(f"model alias {alias!r} does not answer: {result.error}")
        tokens = Usage(input_tokens=result.input_tokens, output_tokens=result.output_tokens)
        model = result.model or alias
        cost = models.cost(alias, model, result.input_tokens, result.output_tokens)
        run.emit(UsageCharged.of(tokens, cost, model=model, alias=alias))

    async def run(self, task: Task, options: StudentOptions, ctx: TaskContext) -> WorkerResult:
        try:
            health = self._health.setdefault(ctx.models, Health())
            agent = StudentAgent(task, options, ctx, health)
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
        except ModelCallError as exc:  # retried as far as it made sense: the cause, in a line
            ending = Ending("error", exc.reason, "model_error")
        except Exception as exc:  # noqa: BLE001 -- a failed model call ends the task, Trace kept
            timeout = float(agent.model.params.get("timeout") or 600)
            cause = describe_failure(exc, agent.model, timeout)
            ending = Ending("error", f"model {agent.model.alias}: {cause}", "model_error")
        return agent.result(ending)


@hookimpl
def register_executors(register: Any) -> None:
    register("student", Student())
