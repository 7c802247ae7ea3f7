"""What both Claude executors do around a run: their own deadline, and the WorkerResult.

The kernel's `run_task` cancels an executor at the deadline, which would lose the Trace of
everything the agent did until then. So each executor stops its `claude` a little before
(`own_timeout`), and reports `timeout` with the partial Trace; run_task's cancellation stays the
backstop. Usage is charged per model once the run is over (the stream's per-message usage is a
placeholder; the result's `modelUsage` is the real count, subagents included); a charge past the
budget cap turns the task into `budget` without losing its Trace.
"""

from __future__ import annotations

from bashgym.contracts import BudgetExceeded, TaskContext
from bashgym.records import Task, WorkerResult
from bashgym_executors_claude.outcome import Ending
from bashgym_executors_claude.stream import TraceBuilder

MAX_MARGIN_S = 2.0


def own_timeout(ctx: TaskContext) -> float | None:
    """Seconds until this executor stops `claude` itself: the deadline less a small margin."""
    left = ctx.remaining_s()
    if left is None:
        return None
    return max(left - min(MAX_MARGIN_S, left * 0.1), 0.0)


def stop_grace(ctx: TaskContext) -> float:
    """How long `claude` gets between TERM and KILL: well inside the margin."""
    left = ctx.remaining_s()
    return 2.0 if left is None else max(min(left / 2, 1.0), 0.1)


def timeout_ending(task: Task) -> Ending:
    return Ending(
        "timeout", "deadline passed (the run's task timeout): claude was stopped", "timeout"
    )


def charge(builder: TraceBuilder, ctx: TaskContext, alias: str | None) -> str | None:
    """Count the run's usage per model; the BudgetExceeded message if the cap was passed."""
    exceeded = None
    for model, (usage, cost) in builder.usage_by_model().items():
        try:
            ctx.charge(usage, cost, model=model, alias=alias)
        except BudgetExceeded as exc:
            exceeded = str(exc)
    return exceeded


def result(
    task: Task,
    builder: TraceBuilder,
    ending: Ending,
    ctx: TaskContext,
    *,
    executor: str,
    alias: str | None,
    system_prompt: str | None,
) -> WorkerResult:
    exceeded = charge(builder, ctx, alias)
    if exceeded and ending.status == "success":
        ending = Ending("budget", exceeded, "max_budget")
    trace = builder.build(ending.outcome(), system_prompt=system_prompt)
    return WorkerResult(
        task_id=task.id,
        executor=executor,
        status=ending.status,
        reason=ending.reason,
        trace=trace,
        final_text=builder.final_text,
    )
