"""The orchestrator's own events, beside the kernel's `task_started` / `task_finished`.

They go through `run.emit` like every event, so events.jsonl, `orchestrate status`, the live
table and an API server's stream all read the same facts; nothing keeps a second count. The
bus redacts secrets from every text field (reasons, output, ids) before anything reads them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bashgym.events import Event

__all__ = [
    "MergeResult",
    "TaskBlocked",
    "TaskCompleted",
    "TaskFailed",
    "TracesIngested",
    "VerifyResult",
    "WorkerOutput",
]


class TaskCompleted(Event):
    """A task's worker succeeded and its check passed (its merge is a `merge_result`)."""

    type: Literal["task_completed"] = "task_completed"
    task_id: str
    attempt: int
    branch: str
    files: list[str] = Field(default_factory=list)
    insertions: int = 0
    deletions: int = 0
    cost_usd: float | None = None


class TaskFailed(Event):
    """An attempt failed; `final` when no retry is left (the task is then `failed`)."""

    type: Literal["task_failed"] = "task_failed"
    task_id: str
    attempt: int
    reason: str
    final: bool
    branch: str | None = None  # the failed attempt's branch, kept for a look


class TaskBlocked(Event):
    """A task that will not run because a task it depends on failed, conflicted or was
    never run (the budget), or because the job's budget left nothing for it."""

    type: Literal["task_blocked"] = "task_blocked"
    task_id: str
    reason: str
    blocked_by: list[str] = Field(default_factory=list)


class WorkerOutput(Event):
    """Output of what the orchestrator ran around a worker: setup, check, commit."""

    type: Literal["worker_output"] = "worker_output"
    task_id: str
    stage: str
    text: str


class MergeResult(Event):
    """A completed branch merged into the integration branch, or why not."""

    type: Literal["merge_result"] = "merge_result"
    task_id: str
    branch: str
    outcome: Literal["merged", "conflicted", "resolved", "empty"]
    conflicts: list[str] = Field(default_factory=list)
    commit: str | None = None


class VerifyResult(Event):
    """The spec's `verify` command on the integration worktree."""

    type: Literal["verify_result"] = "verify_result"
    command: str
    ok: bool
    exit_code: int | None
    output: str = ""
    duration_s: float = 0.0


class TracesIngested(Event):
    """Worker traces handed to the run's sinks as rows (one per attempt) and the plan row."""

    type: Literal["traces_ingested"] = "traces_ingested"
    job: str
    traces: int
    plan_rows: int = 0
