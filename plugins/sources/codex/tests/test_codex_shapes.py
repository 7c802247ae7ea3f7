"""Real-world rollout shapes: developer messages, injected context, dynamic tools, subagent
rollouts, dialogue present only as events, and inputs that are not rollouts at all.

fixtures/shapes holds rollouts built by hand in the line shapes of Codex CLI 0.44-0.98
recordings (session_meta with namespaced dynamic_tools and a thread_spawn source, event_msg
user_message / agent_message twins)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bashgym_sources_codex.source import CodexInputError, CodexOptions, CodexSource

from bashgym.contracts import RunContext
from bashgym.settings import Settings

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"
PARENT = "019c4a10-2b3c-7d4e-8f50-6a7b8c9d0e1f"
CHILD = "019c4a11-3c4d-7e5f-9061-7b8c9d0e1f20"
EVENTS = "019c4a12-4d5e-7f60-a172-8c9d0e1f2031"


@pytest.fixture
def run(tmp_path: Path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def read(run: RunContext, path: Path):
    return {t.id: t for t in CodexSource().open(CodexOptions(path=str(path)), run)}


def test_developer_messages_context_and_dynamic_tools(run):
    trace = read(run, SHAPES)[PARENT]
    # the leading developer message is part of the system prompt, in order
    assert trace.system_prompt == (
        "You are Codex, a coding agent.\n\n<permissions instructions>sandbox_mode is "
        "workspace-write; approval_policy is on-request.</permissions instructions>"
    )
    # the one sent mid-conversation stays in place, as a system message, and is counted
    mid = [m for m in trace.messages if m.role == "system"]
    assert [m.extra["codex_role"] for m in mid] == ["developer"]
    assert trace.extra["left_out"] == {
        "into_system_prompt": {"system": 1},
        "mid_conversation_system": {"system": 1},
    }
    assert run.counts["source.left_out.mid_conversation_system.system"] == 1
    # injected environment context is marked, the user's own prompt is not
    users = [m for m in trace.messages if m.role == "user"]
    assert [m.extra.get("codex_context") for m in users] == ["environment_context", None]
    # event twins of response items are not read twice
    assert sum(m.content.startswith("Review the auth module") for m in users) == 1
    tools = {t.name: t for t in trace.tools}
    assert tools["spawn_agent"].parameters["required"] == ["message"]
    assert tools["read_notes"].parameters["properties"] == {"topic": {"type": "string"}}
    assert tools["wait_agent"].description == "Wait for a subagent."


def test_a_subagent_rollout_nests_under_its_parent(run):
    traces = read(run, SHAPES)
    assert CHILD not in traces  # not a sample of its own
    (child,) = traces[PARENT].subagents
    assert child.id == CHILD
    assert child.provenance.parent_session_id == PARENT
    assert child.provenance.extra["agent_role"] == "explorer"
    assert child.provenance.extra["spawn_depth"] == 1
    assert child.provenance.extra["tool_use_id"] == "call_sp1"  # its output names the thread
    assert run.counts["source.subagents"] == 1


def test_a_subagent_without_its_parent_still_names_it(run, tmp_path):
    alone = tmp_path / "in"
    alone.mkdir()
    child = next(SHAPES.rglob(f"*{CHILD}.jsonl"))
    (alone / child.name).write_bytes(child.read_bytes())
    (trace,) = read(run, alone).values()
    assert trace.provenance.parent_session_id == PARENT
    assert run.counts["source.subagents_without_parent"] == 1


def test_dialogue_only_in_events_is_read(run):
    trace = read(run, SHAPES)[EVENTS]
    assert [(m.role, m.content[:24]) for m in trace.messages] == [
        ("user", "What does make lint run?"),
        ("assistant", ""),
        ("tool", "lint:\n\truff check ."),
        ("assistant", "make lint runs `ruff che"),
    ]
    assert trace.extra["codex_event_messages"] == 2


def test_a_csv_named_as_input_is_one_error(tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(300)))
    with pytest.raises(CodexInputError, match="is not a Codex rollout"):
        CodexSource().open(CodexOptions(path=str(csv)), RunContext(tmp_path, Settings()))


def _line(kind: str, payload: dict, second: int) -> str:
    import json

    return json.dumps(
        {"timestamp": f"2026-01-05T10:00:{second:02d}.000Z", "type": kind, "payload": payload}
    )


def _user_item(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_an_event_copy_before_its_turn_marker_is_not_a_second_user_turn(run, tmp_path):
    """The event copy of a user message written before task_started (or with no marker at
    all) is the same turn as the response item, not a second one."""
    session = {"id": "s-dup", "cwd": "/w", "cli_version": "0.52.0"}
    lines = [
        _line("session_meta", session, 0),
        _line("event_msg", {"type": "user_message", "message": "fix the test"}, 1),
        _line("event_msg", {"type": "task_started"}, 2),
        _line("response_item", _user_item("fix the test"), 3),
        _line("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "fixed"}]}, 4),
        _line("event_msg", {"type": "agent_message", "message": "fixed"}, 5),
        _line("event_msg", {"type": "task_complete"}, 6),
    ]  # fmt: skip
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    trace = read(run, tmp_path / "r.jsonl")["s-dup"]
    assert [(m.role, m.content) for m in trace.messages] == [
        ("user", "fix the test"),
        ("assistant", "fixed"),
    ]
    assert "codex_event_messages" not in trace.extra


def test_turn_completed_usage_is_read_when_no_token_count_says(run, tmp_path):
    """0.50-0.52 files carry the running total on `turn.completed` lines (the exec JSON
    shape) and no token_count event: the last total is the trace's usage."""
    import json

    session = {"id": "s-usage", "cwd": "/w", "cli_version": "0.51.0"}
    lines = [
        _line("session_meta", session, 0),
        _line("response_item", _user_item("hi"), 1),
        _line("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "hello"}]}, 2),
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 100,
                    "cached_input_tokens": 40, "output_tokens": 7}}),
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 250,
                    "cached_input_tokens": 90, "output_tokens": 19}}),
    ]  # fmt: skip
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    trace = read(run, tmp_path / "r.jsonl")["s-usage"]
    # OpenAI counts cached tokens inside input_tokens; BashGym keeps them apart
    assert (trace.usage.input_tokens, trace.usage.cache_read_tokens) == (160, 90)
    assert trace.usage.output_tokens == 19


def test_a_rollout_with_usage_and_no_dialogue_still_counts_its_tokens(run, tmp_path):
    import json

    session = {"id": "s-only-usage", "cwd": "/w", "cli_version": "0.51.0"}
    lines = [
        _line("session_meta", session, 0),
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 30, "output_tokens": 4}}),
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    assert read(run, tmp_path / "r.jsonl") == {}  # no dialogue: dropped with its reason
    assert run.dropped["codex: rollout has no user or assistant message"] == 1
    assert (run.counts["source.tokens.input"], run.counts["source.tokens.output"]) == (30, 4)
