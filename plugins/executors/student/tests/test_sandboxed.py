"""The student's tools inside the real bubblewrap environment: a network attempt, a write
outside the workspace and a command past its timeout — each contained and visible in the Trace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from bashgym_executors_student import Student, StudentOptions
from bashgym_testing import Reply, ToolUse
from bashgym_work_tasks import run_task

from bashgym.plugins import PluginHost
from bashgym.records import Task


def bubblewrap() -> Any:
    registered = PluginHost().registry.items["environments"].get("bubblewrap")
    if registered is None:
        pytest.skip("the bubblewrap environment plugin is not installed")
    why = registered.obj.available()
    if why is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    return registered.obj


def run_sandboxed(harness: Any, task: Task) -> Any:
    env = bubblewrap()

    async def go() -> Any:
        async with env.open(harness.workspace, env.Options()) as session:
            ctx = harness.context(session=session)
            try:
                return await run_task(Student(), "student", task, StudentOptions(), ctx)
            finally:
                ctx.models.close()

    return asyncio.run(go())


def test_network_attempt_is_refused_and_recorded(harness: Any) -> None:
    port = harness.server.port  # the scripted server answers on the host's loopback
    probe = f"curl -sS -m 3 http://127.0.0.1:{port}/v1/models || echo NO-NETWORK"
    harness.server.script(Reply(tool_calls=[ToolUse("run_command", {"command": probe})]), "ok")
    result = run_sandboxed(harness, Task(id="t1", prompt="call out"))
    assert result.status == "success"
    answer = next(m for m in result.trace.messages if m.role == "tool")
    assert "NO-NETWORK" in answer.content and "scripted-model" not in answer.content
    # nothing reached the server from inside
    assert len([r for r in harness.server.requests if r.path.endswith("/models")]) == 0


def test_write_outside_and_timeout_are_contained(harness: Any) -> None:
    outside = harness.root / "outside.txt"
    harness.server.script(
        Reply(tool_calls=[
            ToolUse("run_command", {"command": "echo pwned > /etc/bashgym-pwned"}),
            ToolUse("run_command", {"command": f"echo pwned > {outside}"}),
            ToolUse("run_command", {"command": "sleep 60", "timeout_s": 1}),
            ToolUse("run_command", {"command": "echo inside > in.txt"}),
        ]),
        "ok",
    )  # fmt: skip
    result = run_sandboxed(harness, Task(id="t1", prompt="escape"))
    assert result.status == "success"
    etc, _tmp, sleep, inside = [m for m in result.trace.messages if m.role == "tool"]
    assert etc.is_error and "Read-only file system" in etc.content
    assert not Path("/etc/bashgym-pwned").exists()
    assert not outside.exists()  # the sandbox's /tmp is its own: the host's is untouched
    assert sleep.is_error and sleep.content.startswith("timed out after 1s")
    assert not inside.is_error and (harness.workspace / "in.txt").read_text() == "inside\n"
