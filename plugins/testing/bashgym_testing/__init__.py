"""Test helpers for BashGym and its plugins."""

from bashgym_testing.server import Fault, RecordedRequest, Reply, ScriptedModelServer, ToolUse

__all__ = ["Fault", "RecordedRequest", "Reply", "ScriptedModelServer", "ToolUse"]
