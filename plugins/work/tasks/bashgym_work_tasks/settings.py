"""`[workspace]` and `[tasks]`: where each task of an agent run starts and within which run-wide
limits, settings tables this plugin owns.

Registered with `register_settings`, so a run file's tables, `--set workspace.repo=…`, the same
tables in bashgym.toml and `BASHGYM_WORKSPACE__*` / `BASHGYM_TASKS__*` all land here, validated
by these models; the kernel knows nothing of workspaces or task limits. (A run file of bashgym
0.1 wrote `concurrency`, `task_timeout_s` and `budget_usd` at its top: `bashgym run` moves them
into `[tasks]`.)
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from bashgym.records import Limit
from bashgym.settings import SettingsTable


class WorkspaceSettings(SettingsTable):
    """Where each task of an agent run starts: an empty folder, a template or a git clone."""

    table: ClassVar[str] = "workspace"

    template: Path | None = Field(default=None, description="Folder copied into each workspace.")
    repo: str | None = Field(default=None, description="Git repository (path or URL) to clone.")
    ref: str | None = Field(default=None, description="Branch, tag or commit of `repo`.")
    keep: Literal["failed", "all", "none"] = Field(
        default="failed", description="Workspaces left after their task (for a look)."
    )

    @field_validator("template")
    @classmethod
    def _template_is_a_folder(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        """A template that is no folder fails every task: said where the run's own tables are
        checked (resolve, before a run folder or a model request exists, passes the context
        `run`), as a source's missing path is. Not where settings load: a default template in
        bashgym.toml that moved must not stop a run or command that runs no task. Only a first
        look: the run checks again before its first task (a folder can vanish in between)."""
        if value is None or not (info.context or {}).get("run"):
            return value
        path = value.expanduser()
        if not path.is_dir():
            why = "is not a folder" if path.exists() else "does not exist"
            raise PydanticCustomError("template_missing", why)
        return path


class TasksSettings(SettingsTable):
    """How the run's tasks run: how many at once, each one's deadline, the cost cap of all."""

    table: ClassVar[str] = "tasks"

    concurrency: int = Field(default=4, ge=1, description="Tasks an executor runs at once.")
    task_timeout_s: Limit | None = Field(
        default=None, description="Deadline of each task (default: none)."
    )
    budget_usd: Limit | None = Field(
        default=None, description="Cost cap of the whole run's executor work."
    )
    check_timeout_s: Limit | None = Field(
        default=300, description="Deadline of a task's check (its row's `check` command)."
    )
