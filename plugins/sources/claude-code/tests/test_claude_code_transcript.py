"""One transcript file → one Trace: messages, tool calls, usage counted once, cost, outcome.

Expected numbers are worked out by hand from the fixture files (real Claude Code 2.1.197
recordings in fixtures/, and hand-built sessions in the same shapes under fixtures/projects).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bashgym_sources_claude_code.pricing import estimate_cost, prices_for
from bashgym_sources_claude_code.transcript import parse_file

from bashgym.records import Trace, trace_from_row, trace_to_row

SESSION = "c0c2c553-36d7-4310-82f8-400ff646da8a"


def parse(path: Path) -> tuple[Trace, list[tuple[str, int, str]]]:
    bad: list[tuple[str, int, str]] = []
    trace = parse_file(path, lambda f, n, why: bad.append((f, n, why)))
    assert trace is not None
    return trace, bad


def test_minimal_transcript(fixtures):
    trace, bad = parse(fixtures / "minimal_transcript.jsonl")
    assert bad == []
    assert [m.to_openai() for m in trace.messages] == [
        {"role": "user", "content": "create f.txt with hello"},
        {
            "role": "assistant",
            "content": "I'll create the file.",
            "tool_calls": [
                {
                    "id": "toolu_01AAA",
                    "type": "function",
                    "function": {
                        "name": "Bash",
                        "arguments": '{"command":"echo hello > f.txt && cat f.txt",'
                        '"description":"Create f.txt"}',
                    },
                }
            ],
        },
        {"role": "tool", "content": "hello", "tool_call_id": "toolu_01AAA", "name": "Bash"},
        {"role": "assistant", "content": "Done: f.txt contains hello."},
    ]
    # msg_d1d4 is written as two lines (text, tool_use), each repeating usage 100 in / 20 out;
    # msg_9dfa is one line with the same usage: 2 responses → 200 / 40, not 300 / 60.
    assert trace.usage.input_tokens == 200
    assert trace.usage.output_tokens == 40
    assert trace.usage.cache_creation_tokens == trace.usage.cache_read_tokens == 0
    # sonnet: 200 x $3/M + 40 x $15/M = 0.0006 + 0.0006
    assert trace.cost_usd == pytest.approx(0.0012)
    assert trace.outcome.success is True
    assert trace.outcome.num_turns == 2
    prov = trace.provenance
    assert (prov.source, prov.agent, prov.agent_version) == (
        "claude-code",
        "claude-code",
        "2.1.197",
    )
    assert (prov.session_id, prov.cwd, prov.git_branch) == (SESSION, "/home/dev/proj2", "master")
    assert prov.model == "claude-sonnet-4-5"
    assert prov.source_file == str(fixtures / "minimal_transcript.jsonl")
    assert trace.id == SESSION
    assert trace.system_prompt is None
    assert [t.name for t in trace.tools] == ["Bash"]
    # Claude Code's own Bash schema, not an empty stub: the call passes command, description
    bash = trace.tools[0].parameters
    assert bash["required"] == ["command"]
    assert {"command", "description", "timeout"} <= set(bash["properties"])
    # first line (queue-operation) 05:22:18.505Z to the last timestamped line 05:22:18.903Z
    assert trace.timing.started_at == datetime(2026, 11, 21, 5, 22, 18, 505000, tzinfo=UTC)
    assert trace.timing.duration_s == pytest.approx(0.398)


def test_untrimmed_session_with_two_prompts(fixtures):
    trace, bad = parse(fixtures / "cc_session_tooluse.jsonl")
    assert bad == []
    assert [m.role for m in trace.messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert [c.name for m in trace.messages for c in m.tool_calls] == ["Bash", "Read"]
    assert trace.messages[4].content == "1\thello\n2\t"
    assert trace.messages[4].is_error is False
    # four distinct message ids (d1d4 on two lines), 100 in / 20 out each
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (400, 80)
    assert trace.cost_usd == pytest.approx(0.0024)
    assert trace.outcome.num_turns == 4
    assert trace.timing.duration_s == pytest.approx(93.314)  # 05:22:18.505 → 05:23:51.819
    assert [m.extra.get("message_id") for m in trace.messages if m.role == "assistant"] == [
        "msg_d1d4381d8593439b8b19a399",
        "msg_09179ba899e54a6f94977e43",
        "msg_9dfa7843c905485a90ec4e74",
        "msg_7448a4dd8da94f52bfeb5034",
    ]


def test_stream_json_uses_result_totals_and_init_tools(fixtures):
    trace, bad = parse(fixtures / "stream_json_tooluse.jsonl")
    assert bad == []
    assert [m.role for m in trace.messages] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    # streamed lines say output_tokens 1 (partial); the result line's usage is 300 / 60
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (300, 60)
    assert trace.cost_usd == pytest.approx(0.0018)  # total_cost_usd of the result line
    assert trace.outcome.success is True and trace.outcome.num_turns == 3
    assert len(trace.tools) == 24 and trace.tools[0].name == "Task"  # the init line's list
    assert trace.provenance.cwd == "/home/dev/proj2"
    assert trace.provenance.session_id == SESSION


def test_subagent_session_usage_and_cost(fixtures):
    folder = fixtures / "projects" / "-home-dev-todo-api"
    parent, _ = parse(folder / "c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f.jsonl")
    # msg_01SUB..1 on two lines (3 in, 110 out, 5200 cache write, 11000 cache read, once)
    # + msg_01SUB..2 (1, 90, 700, 16200)
    assert parent.usage.model_dump() == {
        "input_tokens": 4,
        "output_tokens": 200,
        "cache_creation_tokens": 5900,
        "cache_read_tokens": 27200,
    }
    # sonnet: 4x3 + 200x15 + 5900x3.75 + 27200x0.30 = 12 + 3000 + 22125 + 8160 micro-dollars
    assert parent.cost_usd == pytest.approx(0.033297)
    agent_file = (
        folder / "c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f/subagents/agent-a7e3f09b2c41d586e.jsonl"
    )
    child, _ = parse(agent_file)
    # (12, 85, 2900, 0) + (4, 60, 310, 2900) + (2, 70, 0, 3210)
    assert child.usage.model_dump() == {
        "input_tokens": 18,
        "output_tokens": 215,
        "cache_creation_tokens": 3210,
        "cache_read_tokens": 6110,
    }
    # haiku 4.5: 18x1 + 215x5 + 3210x1.25 + 6110x0.10 = 18 + 1075 + 4012.5 + 611
    assert child.cost_usd == pytest.approx(0.0057165)
    assert child.provenance.extra["is_sidechain"] is True
    assert child.id == "c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f:a7e3f09b2c41d586e"
    agent_result = parent.messages[2]
    assert agent_result.role == "tool" and agent_result.name == "Agent"
    assert agent_result.content.startswith("Request bodies are read in one place only")


def test_failing_tool_call_thinking_and_compaction(fixtures):
    folder = fixtures / "projects"
    failing, _ = parse(folder / "-home-dev-todo-api/9a1b3c5d-7e9f-4a2b-8c4d-6e8f0a2b4c6d.jsonl")
    first_result = failing.messages[2]
    assert first_result.role == "tool" and first_result.is_error is True
    assert first_result.content.startswith("Exit code 1\nF")
    assert failing.messages[3].reasoning == (
        "405 means there is no PATCH route. Add one that flips `done`."
    )
    assert failing.messages[3].content == "There is no PATCH route (405). Adding it."
    assert failing.outcome.success is True  # a failed call mid-session is not a failed session

    parallel, _ = parse(folder / "-home-dev-notes-app/7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f.jsonl")
    assert [m.role for m in parallel.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c.id for c in parallel.messages[1].tool_calls] == [
        "toolu_01ParRead0000000001",
        "toolu_01ParRead0000000002",
    ]
    assert [m.is_error for m in parallel.messages[2:4]] == [False, True]

    compacted, _ = parse(folder / "-home-dev-notes-app/e5f6a7b8-c9d0-4e1f-a2b3-c4d5e6f7a8b9.jsonl")
    boundary = compacted.extra["compact_boundaries"]
    assert boundary == [5]
    summary = compacted.messages[5]
    assert summary.role == "user" and summary.extra == {"compact_summary": True}
    assert summary.content.startswith("This session is being continued")


def test_api_error_ends_in_failure(fixtures):
    path = fixtures / "projects/-home-dev-notes-app/0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e.jsonl"
    trace, bad = parse(path)
    assert bad == []
    assert trace.outcome.success is False
    assert trace.outcome.error_kind == "api_error"
    assert trace.outcome.error_message.startswith("API Error: 529")
    assert trace.extra["api_errors"] == 1
    assert trace.provenance.model == "claude-opus-4-5-20251101"  # not "<synthetic>"
    # opus 4.5: 4x5 + 64x25 + 8100x6.25 = 20 + 1600 + 50625 micro-dollars; the synthetic
    # error message has zero usage and no price
    assert trace.cost_usd == pytest.approx(0.052245)


# -- synthetic lines in the real shapes --------------------------------------------------------


def _assistant(mid: str, block: dict[str, Any], usage: tuple[int, int], **extra: Any) -> dict:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": extra.pop("model", "claude-sonnet-4-5"),
            "content": [block],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        },
        "type": "assistant",
        "uuid": f"u-{mid}-{block.get('id', 'x')}",
        "timestamp": "2026-05-01T10:00:00.000Z",
        "sessionId": "s-1",
        "cwd": "/home/dev/x",
        **extra,
    }


def _result(call_id: str, content: Any, is_error: bool = False) -> dict:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "tool_use_id": call_id,
                    "type": "tool_result",
                    "content": content,
                    "is_error": is_error,
                }
            ],
        },
        "timestamp": "2026-05-01T10:00:01.000Z",
    }


def _user(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}, "sessionId": "s-1"}


def _call(call_id: str, name: str = "Bash") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_blocks_of_one_response_merge_even_across_tool_results(tmp_path):
    lines = [
        _user("list twice"),
        _assistant("m1", {"type": "thinking", "thinking": "two calls"}, (10, 1)),
        _assistant("m1", _call("c1"), (10, 5)),
        _result("c1", [{"type": "text", "text": "a.py"}, {"type": "image", "source": {}}]),
        _assistant("m1", _call("c2", "Read"), (10, 57)),  # same response, later block
        _result("c2", "b.py"),
        _assistant("m2", {"type": "text", "text": "done"}, (20, 3)),
        {"type": "progress", "data": {"type": "hook_progress"}},
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "custom-title", "customTitle": "x"},
    ]
    trace, bad = parse(_write(tmp_path / "s.jsonl", lines))
    assert bad == []
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    merged = trace.messages[1]
    assert [c.id for c in merged.tool_calls] == ["c1", "c2"]
    assert merged.reasoning == "two calls"
    assert trace.messages[2].content == "a.py\n[image]"
    assert trace.messages[3].name == "Read"
    # m1 counted once with its largest output (streamed lines may be partial): 10+20 in, 57+3 out
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (30, 60)
    assert trace.outcome.num_turns == 2


@pytest.mark.parametrize(
    ("tail", "kind"),
    [
        ([_assistant("m1", _call("c1"), (1, 1))], "interrupted"),
        (
            [_assistant("m1", _call("c1"), (1, 1)), _result("c1", "boom", is_error=True)],
            "tool_error",
        ),
        ([_assistant("m1", _call("c1"), (1, 1)), _result("c1", "ok")], "interrupted"),
        ([_user("[Request interrupted by user]")], "interrupted"),
        ([], "no_response"),
        (
            [_assistant("m1", {"type": "text", "text": "hi"}, (1, 1), isApiErrorMessage=True)],
            "api_error",
        ),
        ([_assistant("m1", {"type": "text", "text": "hi"}, (1, 1))], None),
    ],
)
def test_outcome_kinds(tmp_path, tail, kind):
    trace, _ = parse(_write(tmp_path / "s.jsonl", [_user("do it"), *tail]))
    assert trace.outcome.error_kind == kind
    assert trace.outcome.success is (kind is None)


def test_unknown_model_has_no_cost_and_meta_lines_are_metadata(tmp_path):
    meta = {**_user("<local-command-stdout></local-command-stdout>"), "isMeta": True}
    lines = [
        _user("hi"),
        _assistant("m1", {"type": "text", "text": "yo"}, (5, 5), model="qwen-7b"),
        meta,
    ]
    trace, _ = parse(_write(tmp_path / "s.jsonl", lines))
    assert trace.cost_usd is None
    assert trace.provenance.model == "qwen-7b"
    # an isMeta line is not a user turn: kept beside the messages, counted as left out
    assert [m.role for m in trace.messages] == ["user", "assistant"]
    assert trace.extra["meta"] == [
        {"kind": "meta", "after": 2, "text": "<local-command-stdout></local-command-stdout>"}
    ]
    assert trace.extra["left_out"] == {"meta": {"user": 1}}
    assert trace.outcome.success is True  # meta lines do not count as the last word


def test_a_file_with_no_messages_is_no_trace(tmp_path):
    lines = [{"type": "summary", "summary": "x", "leafUuid": "u"}, {"type": "queue-operation"}]
    assert parse_file(_write(tmp_path / "s.jsonl", lines), lambda *a: None) is None
    assert parse_file(_write(tmp_path / "e.jsonl", []), lambda *a: None) is None


def test_traces_round_trip_through_rows(fixtures):
    paths = sorted(p for p in fixtures.rglob("*.jsonl") if p.name != "journal.jsonl")
    assert len(paths) >= 10
    for path in paths:
        trace, _ = parse(path)
        row = trace_to_row(trace)
        assert trace_from_row(row) == trace
        # and the constructed models are what validation would build from the same data
        assert Trace.model_validate(trace.model_dump()) == trace


@pytest.mark.parametrize(
    ("model", "row"),
    [
        ("claude-sonnet-4-5-20250929", (3.0, 15.0, 3.75, 0.30)),
        ("claude-3-7-sonnet-latest", (3.0, 15.0, 3.75, 0.30)),
        ("claude-opus-4-5-20251101", (5.0, 25.0, 6.25, 0.50)),
        ("claude-opus-4-6", (5.0, 25.0, 6.25, 0.50)),
        ("claude-opus-4-1-20250805", (15.0, 75.0, 18.75, 1.50)),
        ("claude-opus-4-20250514", (15.0, 75.0, 18.75, 1.50)),
        ("claude-3-opus-20240229", (15.0, 75.0, 18.75, 1.50)),
        ("claude-haiku-4-5-20251001", (1.0, 5.0, 1.25, 0.10)),
        ("claude-3-5-haiku-20241022", (0.80, 4.0, 1.00, 0.08)),
        ("claude-3-haiku-20240307", (0.25, 1.25, 0.30, 0.03)),
        ("gpt-4o", None),
        ("<synthetic>", None),
    ],
)
def test_price_table(model, row):
    assert prices_for(model) == row
    expected = None if row is None else (row[0] + row[1] + row[2] + row[3])
    assert estimate_cost(model, 10**6, 10**6, 10**6, 10**6) == expected


def test_constructor_falls_back_for_models_it_cannot_build_directly():
    from bashgym_sources_claude_code.transcript import _constructor
    from pydantic import BaseModel, Field

    class Aliased(BaseModel):
        value: int = Field(alias="v")

    built = _constructor(Aliased)({"v": 3})  # model_construct maps the alias
    assert built.value == 3
    fast = _constructor(Trace.model_fields["usage"].annotation)
    usage = fast(
        {"input_tokens": 1, "output_tokens": 2, "cache_creation_tokens": 3, "cache_read_tokens": 4}
    )
    assert usage.total_tokens == 10 and usage.model_dump()["cache_read_tokens"] == 4


def test_prompts_of_a_file_without_parent_links_are_all_kept(tmp_path):
    """Lines with uuids but no parentUuid anywhere carry no branches: no prompt is a rewind
    (measured on a public corpus file: 3 of 4 prompts were left out as rewinds)."""
    lines = []
    for i in range(4):
        user = {**_user(f"prompt {i}"), "uuid": f"p{i}", "parentUuid": None,
                "timestamp": f"2026-05-01T10:0{i}:00.000Z"}  # fmt: skip
        answer = _assistant(f"m{i}", {"type": "text", "text": f"answer {i}"}, (1, 1))
        lines += [user, {**answer, "timestamp": f"2026-05-01T10:0{i}:30.000Z"}]
    trace, _ = parse(_write(tmp_path / "s.jsonl", lines))
    assert [m.content for m in trace.messages if m.role == "user"] == [
        f"prompt {i}" for i in range(4)
    ]
    assert "rewind" not in trace.extra.get("left_out", {})


def test_bare_strings_in_a_user_content_list_are_text(tmp_path):
    user = {"type": "user", "message": {"role": "user", "content": ["look at", {"type": "text",
            "text": "this"}, 7]}}  # fmt: skip
    answer = _assistant("m1", {"type": "text", "text": "ok"}, (1, 1))
    trace, _ = parse(_write(tmp_path / "s.jsonl", [user, answer]))
    assert trace.messages[0].content == "look at\nthis"
    # the number has no text to keep: it is counted, not silently skipped
    assert trace.extra["left_out"]["unreadable block"] == {"blocks": 1}


def test_bare_strings_in_an_assistant_content_list_are_text(tmp_path):
    answer = _assistant("m1", {"type": "text", "text": "one"}, (1, 1))
    answer["message"]["content"] = ["zero", {"type": "text", "text": "one"}, None]
    trace, _ = parse(_write(tmp_path / "s.jsonl", [_user("go"), answer]))
    assert trace.messages[1].content.split() == ["zero", "one"]
    assert trace.extra["left_out"]["unreadable block"] == {"blocks": 1}
