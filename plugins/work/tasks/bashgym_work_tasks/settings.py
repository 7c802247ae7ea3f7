"""`[workspace]`: where each task of an agent run starts, a settings table this plugin owns.

Registered with `register_settings`, so a run file's `[workspace]` table, `--set
workspace.repo=…`, `[workspace]` in bashgym.toml and `BASHGYM_WORKSPACE__*` all land here,
validated by this model; the kernel knows nothing of workspaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

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
