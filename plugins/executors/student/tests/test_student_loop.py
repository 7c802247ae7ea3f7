"""The student loop against the scripted OpenAI server: real tool calls, in a temp workspace."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from bashgym_executors_student import StudentOptions
from bashgym_testing import Fault, Reply, ToolUse

from bashgym.events import TaskOutput, UsageCharged
from bashgym.records import Task

TOOL_NAMES = [
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "search_code",
    "run_command",
]


def tool_results(result: Any) -> list[Any]:
    return [m for m in result.trace.messages if m.role == "tool"]


def test_solves_a_task_with_every_tool(harness: Any) -> None:
    harness.server.script(
        Reply(
            "Writing it.",
            tool_calls=[ToolUse("write_file", {"path": "hi.py", "content": "print('hi')\n"})],
        ),
        Reply(
            tool_calls=[
                ToolUse("edit_file", {"path": "hi.py", "old_text": "'hi'", "new_text": "'hello'"}),
                ToolUse("run_command", {"command": "python3 hi.py"}),
            ]
        ),
        Reply(
            tool_calls=[
                ToolUse("read_file", {"path": "hi.py"}),
                ToolUse("list_directory", {}),
                ToolUse("search_code", {"pattern": "hel+o", "glob": "*.py"}),
            ]
        ),
        Reply("hi.py prints hello."),
    )
    result = harness.run(
        Task(id="t1", prompt="write hi.py"), options=StudentOptions(system_prompt="Be brief.")
    )

    assert result.status == "success", result.reason
    assert (harness.workspace / "hi.py").read_text() == "print('hello')\n"
    trace = result.trace
    assert [m.role for m in trace.messages] == (
        ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
        + ["tool"] * 3
        + ["assistant"]
    )
    results = [m.content for m in tool_results(result)]
    assert results[0].startswith("wrote 12 bytes to hi.py")
    assert results[2] == "exit code: 0\nhello\n"
    assert results[3] == "print('hello')\n"
    assert "hi.py" in results[4].splitlines()
    assert results[5] == "hi.py:1: print('hello')"
    assert not any(m.is_error for m in tool_results(result))
    assert [m.name for m in tool_results(result)][:3] == ["write_file", "edit_file", "run_command"]
    assert result.final_text == "hi.py prints hello." and trace.outcome.num_turns == 4
    # the system prompt and the tool schemas are in the Trace, and were what the model got
    assert trace.system_prompt.endswith("Be brief.")
    assert [t.name for t in trace.tools] == TOOL_NAMES
    first = harness.server.completions[0].body
    assert first["messages"][0] == {"role": "system", "content": trace.system_prompt}
    assert [t["function"]["name"] for t in first["tools"]] == TOOL_NAMES
    schema = next(t for t in first["tools"] if t["function"]["name"] == "edit_file")
    assert schema["function"]["parameters"]["required"] == ["path", "old_text", "new_text"]
    # the history sent back carries the tool results under their call ids
    last = harness.server.completions[-1].body["messages"]
    assert [m["role"] for m in last][:3] == ["system", "user", "assistant"]
    assert last[3]["tool_call_id"] == trace.messages[1].tool_calls[0].id
    # usage per call, charged to the run; an unpriced model has an unknown cost
    charged = [e for e in harness.events if isinstance(e, UsageCharged)]
    assert len(charged) == 4 and all(e.alias == "student" for e in charged)
    assert trace.usage.input_tokens == sum(e.input_tokens for e in charged) > 0
    assert trace.cost_usd is None
    notes = [e.text for e in harness.events if isinstance(e, TaskOutput)]
    assert notes[0] == "Writing it." and notes[1].startswith("→ write_file")


def test_cost_comes_from_litellms_price_list(harness: Any) -> None:
    harness.server.script(Reply("done", usage={"input_tokens": 1000, "output_tokens": 500}))
    result = harness.run(Task(id="t1", prompt="hi"), model="gpt-4o-mini")
    with harness.context(model="gpt-4o-mini").models as models:  # the alias's own price
        expected = models.resolve("student").cost(1000, 500)
    assert expected and result.trace.cost_usd == pytest.approx(expected)
    assert result.trace.usage.input_tokens == 1000 and result.trace.usage.output_tokens == 500


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolUse("read_file", {"path": "../outside.txt"}), "outside the workspace"),
        (ToolUse("write_file", {"path": "/tmp/bashgym-escape.txt", "content": "x"}), "outside"),
        (ToolUse("read_file", {"path": "link/outside.txt"}), "outside the workspace"),
        (
            ToolUse("edit_file", {"path": "link/outside.txt", "old_text": "s", "new_text": "x"}),
            "outside",
        ),
        (ToolUse("list_directory", {"path": "link"}), "outside the workspace"),
    ],
    ids=["dotdot", "absolute", "symlink-read", "symlink-edit", "symlink-list"],
)
def test_path_escapes_are_contained(harness: Any, call: ToolUse, needle: str) -> None:
    outside = harness.root / "outside.txt"
    outside.write_text("secret")
    os.symlink(harness.root, harness.workspace / "link")
    harness.server.script(Reply(tool_calls=[call]), Reply("ok"))
    result = harness.run(Task(id="t1", prompt="escape"))
    assert result.status == "success"  # the model got an error and went on
    (answer,) = tool_results(result)
    assert answer.is_error and needle in answer.content and "secret" not in answer.content
    assert outside.read_text() == "secret"
    assert not os.path.exists("/tmp/bashgym-escape.txt")
    # the error went back to the model as the tool result
    sent = harness.server.completions[-1].body["messages"][-1]
    assert sent["role"] == "tool" and needle in sent["content"]


def test_command_past_its_timeout_is_stopped(harness: Any) -> None:
    harness.server.script(
        Reply(
            tool_calls=[
                ToolUse("run_command", {"command": "echo started; sleep 60", "timeout_s": 1})
            ]
        ),
        Reply("it hung"),
    )
    result = harness.run(Task(id="t1", prompt="hang"))
    assert result.status == "success"
    (answer,) = tool_results(result)
    assert answer.is_error and answer.content.startswith("timed out after 1s")
    assert "started" in answer.content


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolUse("write_file", '{"path": "a.txt", "content": '), "not JSON"),
        (ToolUse("write_file", {"path": "a.txt"}), "content: Field required"),
        (ToolUse("read_file", {"path": "a.txt", "bogus": 1}), "bogus: Extra inputs"),
        (ToolUse("read_file", "[1, 2]"), "invalid arguments"),
        (ToolUse("delete_everything", {}), "unknown tool 'delete_everything'"),
    ],
    ids=["not-json", "missing", "extra", "not-object", "unknown-tool"],
)
def test_malformed_calls_go_back_as_tool_errors(harness: Any, call: ToolUse, needle: str) -> None:
    harness.server.script(Reply(tool_calls=[call]), Reply("sorry"))
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "success"
    (answer,) = tool_results(result)
    assert answer.is_error and needle in answer.content
    assert not (harness.workspace / "a.txt").exists()
    # the malformed call itself is kept verbatim in the Trace
    assert result.trace.messages[1].tool_calls[0].arguments == call.arguments_json


def test_max_turns_is_failed_with_the_trace(harness: Any) -> None:
    harness.server.script(  # different calls each turn: not a repetition
        *[Reply(tool_calls=[ToolUse("list_directory", {"depth": d})]) for d in range(1, 6)]
    )
    result = harness.run(Task(id="t1", prompt="loop"), options=StudentOptions(max_turns=3))
    assert result.status == "failed" and result.trace.outcome.error_kind == "max_turns"
    assert result.trace.tool_call_count == 3 and len(harness.server.completions) == 3


def test_budget_cap_stops_the_loop(harness: Any) -> None:
    big = {"input_tokens": 100_000, "output_tokens": 10_000}
    harness.server.script(*[Reply(tool_calls=[ToolUse("list_directory", {})], usage=big)] * 5)
    result = harness.run(Task(id="t1", prompt="spend"), model="gpt-4o-mini", budget=0.03)
    assert result.status == "budget", result.reason
    assert 0.03 < result.trace.cost_usd < 0.1
    assert len(harness.server.completions) < 5 and result.trace.tool_call_count >= 1


@pytest.mark.parametrize("code", [500, 401])
def test_model_errors_end_the_task_with_the_trace(harness: Any, code: int) -> None:
    harness.server.script(Reply(tool_calls=[ToolUse("list_directory", {})]), Fault.status(code))
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "error"
    assert str(code) in (result.reason or "")
    assert result.trace.tool_call_count == 1  # the turn before the failure is kept


def test_missing_key_is_named(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BASHGYM_TEST_OPENAI_KEY")
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "error" and "BASHGYM_TEST_OPENAI_KEY" in (result.reason or "")
    assert harness.server.completions == []


def test_deadline_keeps_the_partial_trace(harness: Any) -> None:
    harness.server.script(
        Reply("Sleeping.", tool_calls=[ToolUse("run_command", {"command": "sleep 60"})]),
        Reply("never"),
    )
    result = harness.run(Task(id="t1", prompt="hang"), timeout=3)
    assert result.status == "timeout"
    assert result.trace.messages[1].content == "Sleeping."
    assert json.loads(result.trace.messages[1].tool_calls[0].arguments) == {"command": "sleep 60"}


def test_options_reach_the_request(harness: Any) -> None:
    harness.server.script(Reply("ok"))
    harness.run(
        Task(id="t1", prompt="go"),
        options=StudentOptions(temperature=0.2, max_tokens=64, system_prompt="S"),
    )
    body = harness.server.completions[0].body
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert body["messages"][0]["content"] == "S"
    assert body["model"] == "scripted-student"


def test_tool_calls_written_as_text_are_run_and_recorded_as_calls(harness: Any) -> None:
    """What the embedded 0.5B model writes: the call as JSON text, a closing brace short, or in
    a fence or Qwen's <tool_call> tags; each runs, and the trace holds it as a real call."""
    harness.server.script(
        Reply('{"name": "write_file", "arguments": {"path": "a.txt", "content": "alpha"}'),
        Reply('```json\n{"name": "run_command", "parameters": {"command": "cat a.txt"}}\n```'),
        Reply(
            '<tool_call>\n{"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}\n'
            "</tool_call>"
        ),  # arguments as a JSON string, as the API sends them
        Reply('Done: {"name": "summary", "arguments": {"files": 1}}'),  # not our tool: an answer
    )
    result = harness.run(Task(id="t1", prompt="write a.txt"))

    assert result.status == "success", result.reason
    assert (harness.workspace / "a.txt").read_text() == "alpha"
    trace = result.trace
    calls = [(c.name, json.loads(c.arguments)) for m in trace.messages for c in m.tool_calls or []]
    assert calls == [
        ("write_file", {"path": "a.txt", "content": "alpha"}),
        ("run_command", {"command": "cat a.txt"}),
        ("read_file", {"path": "a.txt"}),
    ]
    assistants = [m for m in trace.messages if m.role == "assistant"]
    assert [m.content for m in assistants[:3]] == ["", "", ""]  # the text was the call
    assert assistants[-1].content.startswith("Done:") and not assistants[-1].tool_calls
    assert [m.is_error for m in tool_results(result)] == [False, False, False]
    assert "alpha" in tool_results(result)[1].content
    assert trace.extra["tool_calls_from_text"] == 3


def test_text_tool_calls_off_ends_the_task_on_such_a_reply(harness: Any) -> None:
    call = '{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}'
    harness.server.script(Reply(call))
    result = harness.run(
        Task(id="t1", prompt="write a.txt"), options=StudentOptions(text_tool_calls=False)
    )
    assert result.status == "success" and not (harness.workspace / "a.txt").exists()
    assert "tool_calls_from_text" not in result.trace.extra
