"""Executors claude-cli and agent-sdk: Claude Code headless, through `claude -p` (stream-json)
or through claude-agent-sdk, both mapped to a Trace by one stream-json reader (`stream`)."""

from typing import Any

from bashgym import hookimpl
from bashgym_executors_claude.cli import ClaudeCli
from bashgym_executors_claude.options import ClaudeOptions
from bashgym_executors_claude.sdk import AgentSdk

__all__ = ["AgentSdk", "ClaudeCli", "ClaudeOptions"]


@hookimpl
def register_executors(register: Any) -> None:
    register("claude-cli", ClaudeCli())
    register("agent-sdk", AgentSdk())
