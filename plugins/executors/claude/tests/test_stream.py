"""The stream-json → Trace mapping and the result → status rules, on recorded and made-up lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bashgym_executors_claude.outcome import ending
from bashgym_executors_claude.stream import TraceBuilder

# Real `claude -p --output-format stream-json --verbose` output (from shared/reference/samples).
SAMPLE = Path(__file__).parent / "data" / "stream_json_tooluse.jsonl"


def feed(lines: list[dict]) -> TraceBuilder:
    builder = TraceBuilder("t1", "make f.txt", executor="claude-cli")
    for line in lines:
        builder.feed(line)
    return builder


def test_recorded_stream_becomes_a_trace() -> None:
    lines = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    builder = feed(lines)
    trace = builder.build(ending(builder.result).outcome())
    assert [m.role for m in trace.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first = trace.messages[1]  # two lines sharing one message id: one message
    assert first.content == "I'll create the file." and first.tool_calls[0].name == "Bash"
    assert trace.messages[2].content == "hello" and trace.messages[2].tool_call_id == "toolu_01AAA"
    assert trace.messages[4].name == "Read" and trace.messages[4].content == "1\thello\n2\t"
    # usage from modelUsage (the result's own), cost and turns from the result
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (300, 60)
    assert trace.cost_usd == pytest.approx(0.0018)
    assert trace.outcome.success and trace.outcome.num_turns == 3
    assert trace.provenance.session_id == "c0c2c553-36d7-4310-82f8-400ff646da8a"
    assert trace.provenance.agent_version == "2.1.197"
    assert "Write" in [t.name for t in trace.tools]
    # the stream only names its tools: each carries Claude Code's own schema, as in
    # `-s claude-code` rows, never an empty stub
    tools = {t.name: t for t in trace.tools}
    assert tools["Write"].description and tools["Write"].parameters["required"] == [
        "file_path", "content"
    ]  # fmt: skip
    assert all(t.description and t.parameters.get("properties") is not None for t in trace.tools)
    assert builder.final_text == "Done: f.txt contains hello."


def assistant(msg_id: str, block: dict, parent: str | None = None, tokens: int = 10) -> dict:
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {
            "id": msg_id, "model": "m", "content": [block],
            "usage": {"input_tokens": tokens, "output_tokens": 1},
        },
    }  # fmt: skip


def test_subagent_lines_go_to_their_own_trace_and_usage_counts_once() -> None:
    task = {"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"prompt": "look"}}
    builder = feed(
        [
            {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Task"]},
            assistant("m1", {"type": "thinking", "thinking": "plan"}),
            assistant("m1", task),
            {
                "type": "system",
                "subtype": "task_started",
                "tool_use_id": "toolu_T",
                "prompt": "look",
            },
            assistant(
                "m2", {"type": "text", "text": "sub: found 2 files"}, parent="toolu_T", tokens=7
            ),
            assistant("m2", {"type": "text", "text": "more"}, parent="toolu_T", tokens=7),
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_T",
                            "content": [{"type": "text", "text": "2 files"}],
                        },
                    ]
                },
            },
            assistant("m3", {"type": "text", "text": "There are 2 files."}),
        ]
    )
    trace = builder.build(ending(None, exit_code=-9).outcome())
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[1].reasoning == "plan" and trace.messages[2].content == "2 files"
    assert trace.messages[2].name == "Task"
    (sub,) = trace.subagents
    assert [m.content for m in sub.messages] == ["look", "sub: found 2 files\n\nmore"]
    assert sub.provenance.parent_session_id == "s1" and sub.usage.input_tokens == 7
    # no result line (a killed run): usage from the messages, each message id once; cost unknown
    assert trace.usage.input_tokens == 10 + 10 + 7 and trace.cost_usd is None
    assert trace.outcome.error_kind == "crash"


def test_synthetic_api_error_message_is_not_a_model_turn() -> None:
    synthetic = assistant("x", {"type": "text", "text": "API Error: 500 boom"})
    synthetic["message"]["model"] = "<synthetic>"
    builder = feed([synthetic])
    trace = builder.build(ending(None, exit_code=1, synthetic=builder.synthetic[-1]).outcome())
    assert [m.role for m in trace.messages] == ["user"]
    assert trace.extra["synthetic_messages"] == ["API Error: 500 boom"]
    assert "API Error: 500 boom" in (trace.outcome.error_message or "")


DENIAL = {"tool_name": "Write", "tool_input": {"file_path": "/w/g.txt"}}


@pytest.mark.parametrize(
    ("result", "status", "kind"),
    [
        ({"subtype": "success", "is_error": False}, "success", None),
        (
            {"subtype": "success", "is_error": False, "permission_denials": [DENIAL]},
            "denied",
            "permission_denied",
        ),
        (
            {"subtype": "error_max_turns", "is_error": True, "permission_denials": [DENIAL]},
            "denied",
            "permission_denied",
        ),
        (
            {
                "subtype": "error_max_turns",
                "is_error": True,
                "errors": ["Reached maximum number of turns (2)"],
            },
            "failed",
            "max_turns",
        ),
        ({"subtype": "error_max_budget_usd", "is_error": True}, "budget", "max_budget"),
        (
            {
                "subtype": "success",
                "is_error": True,
                "api_error_status": 529,
                "result": "Overloaded",
            },
            "error",
            "api_error",
        ),
        (
            {"subtype": "error_during_execution", "is_error": True, "errors": ["boom"]},
            "error",
            "error_during_execution",
        ),
    ],
)
def test_result_to_status(result: dict, status: str, kind: str | None) -> None:
    end = ending(result)
    assert (end.status, end.error_kind) == (status, kind)
    if status == "denied":
        assert end.reason == "permission denied: Write(/w/g.txt)"
