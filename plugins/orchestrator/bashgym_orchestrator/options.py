"""What a user writes for the orchestrator (plain config, no behaviour): the `orchestrator`
source's options and the `[orchestrator]` settings table (defaults from config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from bashgym.contracts import Options
from bashgym.records import Limit
from bashgym.settings import SettingsTable


class OrchestratorSettings(SettingsTable):
    """Defaults of `bashgym orchestrate run`, from bashgym.toml's `[orchestrator]` table or
    BASHGYM_ORCHESTRATOR__* variables; the command's flags win."""

    table: ClassVar[str] = "orchestrator"

    executor: str = Field(default="claude-cli", description="Executor each task runs on.")
    environment: str | None = Field(
        default=None, description="Environment of the tasks (default: the most isolating)."
    )
    router: str | None = Field(
        default=None, description="Router picking each task's executor (overrides executor)."
    )
    backend: str | None = Field(
        default=None,
        description="Where each task's worker runs (e.g. ray; a shared filesystem is assumed); "
        "none: in the job's own process.",
    )
    workers: int = Field(default=3, ge=1, description="Tasks run at once.")
    retries: int = Field(default=2, ge=0, description="Retries of a failed task.")


class OrchestratorOptions(Options):
    """Options of the `orchestrator` source (`bashgym orchestrate run` fills them from its flags;
    `bashgym run -s orchestrator --set source.job=DIR` reads a job's traces and runs nothing)."""

    job: Path = Field(description="The job directory (made by `bashgym orchestrate plan`).")
    execute: bool = Field(
        default=False,
        description="Run the job's tasks (what `orchestrate run` sets); false: only read the "
        "traces a job left.",
    )
    workers: int | None = Field(default=None, ge=1, description="Tasks run at once.")
    budget_usd: Limit | None = Field(
        default=None, description="The job's cost cap (default: the spec's; none: no cap)."
    )
    executor: str | None = Field(default=None, description="Executor name (default: config).")
    executor_options: dict[str, Any] = Field(
        default_factory=dict, description="The executor's options, e.g. {max_turns = 20}."
    )
    environment: str | None = Field(default=None, description="Environment name.")
    environment_options: dict[str, Any] = Field(
        default_factory=dict, description="The environment's options."
    )
    router: str | None = Field(default=None, description="Router name (picks each executor).")
    router_options: dict[str, Any] = Field(default_factory=dict, description="Its options.")
    retries: int | None = Field(default=None, ge=0, description="Retries of a failed task.")
    task_timeout_s: Limit | None = Field(default=None, description="Deadline of each attempt.")
    resolve_conflicts: bool = Field(
        default=False,
        description="Give a merge conflict to a worker as its task on the integration worktree.",
    )
    keep_worktrees: Literal["failed", "all", "none"] = Field(
        default="failed", description="Worktrees left at the end (failed: failed/conflicted)."
    )
    stream_sinks: list[str] = Field(
        default_factory=lambda: ["nemo-jsonl", "parquet"],
        description="Sinks rewritten with the job's rows each time an attempt ends (local "
        "files, renamed into place), so a killed job keeps what had ended; the others write "
        "at the end.",
    )
    port_base: int = Field(
        default=41000, ge=1024, le=65000, description="First port handed to workers."
    )
    ports_per_worker: int = Field(
        default=10, ge=1, le=1000, description="Ports each worker slot gets (BASHGYM_PORTS)."
    )
