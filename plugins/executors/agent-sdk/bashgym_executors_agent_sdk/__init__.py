"""Executor agent-sdk: Claude Code through claude-agent-sdk (its wheel bundles the CLI)."""
