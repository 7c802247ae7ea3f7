"""Test helpers for BashGym and its plugins: a scripted model server (OpenAI and Anthropic APIs,
also `python -m bashgym_testing`), a scripted executor, a plain environment session, the
model session a run gets (`models_for`), and pytest fixtures (auto-loaded)."""

from bashgym_testing.executors import ScriptedExecutor
from bashgym_testing.models import models_for
from bashgym_testing.runtimes import RecordingRuntime
from bashgym_testing.server import Fault, RecordedRequest, Reply, ScriptedModelServer, ToolUse
from bashgym_testing.sessions import PlainSession, SessionProbe

__all__ = [
    "Fault",
    "PlainSession",
    "RecordedRequest",
    "RecordingRuntime",
    "Reply",
    "ScriptedExecutor",
    "ScriptedModelServer",
    "SessionProbe",
    "ToolUse",
    "models_for",
]
