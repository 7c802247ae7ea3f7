"""What a user writes for the claude-cli and agent-sdk executors (plain config, no behaviour).

Both executors take the same options: they run the same agent, one through `claude -p`, the
other through the Python SDK. A Task's own limits (max_turns, max_budget_usd, allowed_tools,
system_prompt) win over these defaults.
"""

from __future__ import annotations

import shutil
from typing import Any, Literal

from pydantic import Field, field_validator

from bashgym.contracts import Options

PermissionMode = Literal["acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"]
BYPASS_MODES = ("bypassPermissions",)


class ClaudeOptions(Options):
    model_alias: str = Field(
        default="claude",
        description="Model alias in settings (provider anthropic) whose endpoint, api_key_env, "
        "model and params.max_retries / params.timeout configure Claude Code; when settings "
        "have no such alias, Claude Code's own configuration (env, login) is used.",
    )
    model: str | None = Field(
        default=None, description="Model id (`--model`); default: the alias's model."
    )
    permission_mode: PermissionMode = Field(
        default="bypassPermissions",
        description="`--permission-mode`. Each task runs in its own throwaway workspace inside "
        "the run's environment, so the default lets the agent edit and run commands there; as "
        "root, bypass mode sets IS_SANDBOX=1 (Claude Code refuses it otherwise).",
    )
    allowed_tools: list[str] | None = Field(
        default=None, description="`--allowedTools`, e.g. ['Bash(git *)', 'Edit']."
    )
    disallowed_tools: list[str] | None = Field(default=None, description="`--disallowedTools`.")
    tools: list[str] | None = Field(
        default=None, description="`--tools`: the built-in tools offered, e.g. ['Bash', 'Read']."
    )
    max_turns: int | None = Field(default=30, ge=1, description="`--max-turns` per task.")
    max_budget_usd: float | None = Field(
        default=None, gt=0, description="`--max-budget-usd` per task (also capped by the run's)."
    )
    append_system_prompt: str | None = Field(
        default=None,
        description="Added to Claude Code's own system prompt (a task's system_prompt too).",
    )
    json_schema: dict[str, Any] | None = Field(
        default=None,
        description="`--json-schema`: the final answer must match it (kept in the Trace as "
        "provenance.extra.structured_output).",
    )
    resume: str | None = Field(
        default=None,
        description="`--resume SESSION_ID` for every task; a task's metadata `resume` wins.",
    )
    claude_path: str | None = Field(
        default=None,
        description="The `claude` binary; default: `claude` on PATH, else the one bundled in "
        "the claude-agent-sdk wheel.",
    )
    config_dir: str | None = Field(
        default=None,
        description="CLAUDE_CONFIG_DIR (settings, sessions); default: Claude Code's (~/.claude).",
    )
    persist_session: bool = Field(
        default=True,
        description="Write the session transcript (needed to --resume it later).",
    )

    @field_validator("claude_path")
    @classmethod
    def _an_executable(cls, path: str | None) -> str | None:
        """Checked when the run is resolved (exit 2 before any task), not when the first task
        fails on it: the same lookup `claude` is later started with (a path, or a name on
        PATH)."""
        if path is not None and shutil.which(path) is None:
            raise ValueError(
                f"{path!r} is not an executable file (give the claude binary's path or a name "
                "on PATH; leave it out for `claude` on PATH, else the bundled one)"
            )
        return path
