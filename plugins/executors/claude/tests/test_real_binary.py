"""The real `claude` binary (bundled in the claude-agent-sdk wheel) against the scripted
Anthropic server, executing real tool calls in a temp git repository — through both executors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from bashgym_executors_claude import AgentSdk, ClaudeCli
from bashgym_testing import Fault, Reply, ToolUse
from bashgym_work_tasks import run_task

from bashgym.events import TaskOutput
from bashgym.records import Task

EXECUTORS = [ClaudeCli(), AgentSdk()]
IDS = ["claude-cli", "agent-sdk"]


def run(harness: Any, executor: Any, task: Task, *, timeout: float | None = None, **opts: Any):
    ctx = harness.context(timeout=timeout)
    options = harness.options(executor, **opts)
    return asyncio.run(run_task(executor, executor.name, task, options, ctx))


def script_files(server: Any, workspace: Any) -> None:
    bash = ToolUse("Bash", {"command": "echo hello > f.txt && cat f.txt"})
    write = ToolUse("Write", {"file_path": str(workspace / "g.txt"), "content": "bye\n"})
    server.script(
        Reply("I'll create the file.", tool_calls=[bash]),
        Reply(tool_calls=[ToolUse("Read", {"file_path": str(workspace / "f.txt")})]),
        Reply(tool_calls=[write]),
        Reply("Done: f.txt says hello."),
    )


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_real_tool_calls_become_a_trace(harness: Any, executor: Any) -> None:
    script_files(harness.server, harness.workspace)
    result = run(harness, executor, Task(id="t1", prompt="make f.txt"))

    assert result.status == "success", result.reason
    assert (harness.workspace / "f.txt").read_text() == "hello\n"
    assert (harness.workspace / "g.txt").read_text() == "bye\n"
    trace = result.trace
    roles = [m.role for m in trace.messages]
    assert roles == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert trace.messages[0].content == "make f.txt"
    first = trace.messages[1]
    assert first.content == "I'll create the file."  # text and tool_use lines merged by id
    assert [c.name for c in first.tool_calls] == ["Bash"]
    assert json.loads(first.tool_calls[0].arguments)["command"].startswith("echo hello")
    assert trace.messages[2].content == "hello" and trace.messages[2].name == "Bash"
    assert trace.messages[2].tool_call_id == first.tool_calls[0].id
    assert "hello" in trace.messages[4].content
    assert trace.messages[-1].content == result.final_text == "Done: f.txt says hello."
    assert trace.tool_call_count == 3
    assert {"Bash", "Read", "Write"} <= {t.name for t in trace.tools}
    assert trace.usage.input_tokens > 0 and trace.usage.output_tokens > 0
    assert trace.cost_usd is not None and trace.cost_usd > 0
    assert trace.outcome.success is True and trace.outcome.num_turns == 4
    assert trace.provenance.session_id and trace.provenance.executor == executor.name
    assert trace.provenance.model == "claude-sonnet-4-5"
    # settings reached the binary: the alias's endpoint, key (from its env var) and model
    requests = harness.server.completions
    assert len(requests) == 4
    assert {r.api_key for r in requests} == {harness.key}
    assert {r.model for r in requests} == {"claude-sonnet-4-5"}
    # live progress, and usage charged to the run
    notes = [e.text for e in harness.events if isinstance(e, TaskOutput)]
    assert any(n.startswith("→ Bash") for n in notes) and "Done: f.txt says hello." in notes
    charged = [e for e in harness.events if e.type == "usage_charged"]
    assert charged and sum(e.input_tokens for e in charged) == trace.usage.input_tokens


def comparable(trace: Any) -> list[tuple[Any, ...]]:
    """Messages without the ids and times that differ between two runs."""
    return [
        (m.role, m.content, m.name, m.is_error, [(c.name, c.arguments) for c in m.tool_calls])
        for m in trace.messages
    ]


def test_cli_and_sdk_traces_agree(harness: Any) -> None:
    traces = []
    for executor in EXECUTORS:
        for name in ("f.txt", "g.txt"):
            (harness.workspace / name).unlink(missing_ok=True)
        script_files(harness.server, harness.workspace)
        result = run(harness, executor, Task(id="t1", prompt="make f.txt"))
        assert result.status == "success", result.reason
        traces.append(result.trace)
    cli, sdk = traces
    assert comparable(cli) == comparable(sdk)
    assert cli.usage == sdk.usage and cli.cost_usd == sdk.cost_usd
    assert [t.name for t in cli.tools] == [t.name for t in sdk.tools]
    assert cli.outcome == sdk.outcome


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_max_turns_is_failed(harness: Any, executor: Any) -> None:
    harness.server.script(*[Reply(tool_calls=[ToolUse("Bash", {"command": "echo hi"})])] * 4)
    result = run(harness, executor, Task(id="t1", prompt="loop"), max_turns=2)
    assert result.status == "failed"
    assert result.trace.outcome.error_kind == "max_turns"
    assert "turns" in (result.reason or "")
    assert result.trace.tool_call_count == 2  # the work done before the limit is kept


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_budget_exceeded(harness: Any, executor: Any) -> None:
    harness.server.script(*[Reply(tool_calls=[ToolUse("Bash", {"command": "echo hi"})])] * 3)
    result = run(harness, executor, Task(id="t1", prompt="spend"), max_budget_usd=0.001)
    assert result.status == "budget", result.reason
    assert result.trace.outcome.error_kind == "max_budget"
    assert result.trace.cost_usd and result.trace.cost_usd > 0.001


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
@pytest.mark.parametrize("code", [500, 401])
def test_api_errors(harness: Any, executor: Any, code: int) -> None:
    harness.server.script(Fault.status(code))
    result = run(harness, executor, Task(id="t1", prompt="hi"))
    assert result.status == "error"
    assert result.reason and result.reason.startswith(f"API error {code}")
    assert result.trace.outcome.error_kind == "api_error"
    # the CLI's own error text is not a model turn: no assistant message in the training data
    assert [m.role for m in result.trace.messages] == ["user"]
    assert len(harness.server.completions) == 1  # retries come from the alias: 0


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_denied_edit_is_denied_not_success(harness: Any, executor: Any) -> None:
    target = harness.workspace / "g.txt"
    harness.server.script(
        Reply(tool_calls=[ToolUse("Write", {"file_path": str(target), "content": "x"})]),
        Reply("Done."),  # the agent claims success anyway
    )
    result = run(harness, executor, Task(id="t1", prompt="write g"), permission_mode="default")
    assert result.status == "denied"
    assert "Write(" in (result.reason or "") and not target.exists()
    assert result.trace.outcome.success is False
    tool = [m for m in result.trace.messages if m.role == "tool"]
    assert tool and tool[0].is_error


def gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


HANG = "echo $$ > shell.pid; sleep 600"


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_hang_past_the_deadline_stops_the_whole_group(harness: Any, executor: Any) -> None:
    harness.server.script(Reply("Waiting.", tool_calls=[ToolUse("Bash", {"command": HANG})]))
    # the deadline must fall after the agent started its command: the bundled binary's start-up
    # and first model call took over 6 s on a loaded 2-core machine (measured: no tool call yet)
    result = run(harness, executor, Task(id="t1", prompt="hang"), timeout=15)
    assert result.status == "timeout"
    assert result.trace.outcome.error_kind == "timeout"
    # the Trace of the work until the deadline is kept
    assert [c.name for c in result.trace.messages[1].tool_calls] == ["Bash"]
    pid = int((harness.workspace / "shell.pid").read_text())
    assert gone(pid), "the agent's command outlived the deadline"


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_model_that_never_answers_times_out(harness: Any, executor: Any) -> None:
    harness.server.script(Fault.timeout(60))
    result = run(harness, executor, Task(id="t1", prompt="hi"), timeout=4)
    assert result.status == "timeout"


@pytest.mark.parametrize("executor", EXECUTORS, ids=IDS)
def test_cancellation_stops_the_whole_group(harness: Any, executor: Any) -> None:
    harness.server.script(Reply(tool_calls=[ToolUse("Bash", {"command": HANG})]))
    pid_file = harness.workspace / "shell.pid"

    async def scenario() -> None:
        ctx = harness.context()
        work = asyncio.create_task(
            executor.run(Task(id="t1", prompt="hang"), harness.options(executor), ctx)
        )
        for _ in range(600):  # until the agent's command runs (or the run ended early)
            if (pid_file.exists() and pid_file.read_text().strip()) or work.done():
                break
            await asyncio.sleep(0.05)
        assert not work.done(), work.result()
        work.cancel()
        with pytest.raises(asyncio.CancelledError):
            await work

    asyncio.run(scenario())
    assert gone(int(pid_file.read_text())), "the agent's command outlived the cancellation"
