"""Real-world transcript shapes: 1.x subagents inside the session file, rewinds, metadata lines,
queued prompts, documents, 2.x subagent and workflow files, tool schemas, wrong inputs.

fixtures/shapes/v1-sidechains holds a real Claude Code 1.0.108 session (from the public mock
data of d-kimuson/claude-code-viewer, long strings trimmed, paths rewritten); v2-rewind and
v2-workflow are built by hand in the line shapes of 2.1.x recordings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bashgym_sources_claude_code.source import ClaudeCodeInputError
from bashgym_sources_claude_code.transcript import parse_file

from bashgym.records import Trace, trace_from_row, trace_to_row

V1 = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
REWIND = "6d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
WORKFLOW = "7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"


@pytest.fixture
def shapes(fixtures) -> Path:
    return fixtures / "shapes"


def answered(trace: Trace) -> bool:
    """Every tool call has a tool result after it, and every result answers a call."""
    calls = [c.id for m in trace.messages for c in m.tool_calls]
    results = [m.tool_call_id for m in trace.messages if m.role == "tool"]
    return sorted(calls) == sorted(results)


def test_v1_subagents_in_the_session_file_become_nested_traces(read, shapes, run):
    (trace,) = read(path=str(shapes / "v1-sidechains"))
    assert trace.id == V1
    # no subagent prompt is a user turn of the main agent, no subagent call is its call
    users = [m.content for m in trace.messages if m.role == "user"]
    assert len(users) == 1 and users[0].startswith("<command-message>orchestrator")
    assert not any(c.name in ("Glob", "Bash") and c.id == "toolu_019jdVD71Nj1AexezqLfBwgn"
                   for m in trace.messages for c in m.tool_calls)  # fmt: skip
    assert answered(trace)  # so the tool-use sink no longer drops the session
    tasks = {c.id: c.arguments_dict() for m in trace.messages for c in m.tool_calls
             if c.name == "Task"}  # fmt: skip
    assert len(tasks) == 3  # one of them failed validation and ran no subagent
    assert [s.provenance.extra["tool_use_id"] for s in trace.subagents] == [
        "toolu_014YF9TXhDRR7BnpasNJ7gjC",
        "toolu_01LKfUwrsnof18CpWZQcJH44",
    ]
    for child in trace.subagents:
        spawned_by = tasks[child.provenance.extra["tool_use_id"]]
        assert child.messages[0].role == "user"
        assert child.messages[0].content == spawned_by["prompt"]
        assert child.provenance.parent_session_id == V1
        assert child.provenance.source_file == trace.provenance.source_file
        assert answered(child)
    assert [len(s.messages) for s in trace.subagents] == [6, 14]
    assert [s.outcome.num_turns for s in trace.subagents] == [3, 7]
    # the slash command's expansion (an isMeta line) is part of the command's turn
    assert "Split complex tasks into independent subtasks" in users[0]
    assert trace.extra["left_out"] == {"merged": {"user": 1}}
    assert run.counts["source.subagents"] == 2
    assert trace_from_row(trace_to_row(trace)) == trace
    assert Trace.model_validate(trace.model_dump()) == trace


def test_a_rewound_branch_is_left_out_and_counted(read, shapes, run):
    (trace,) = read(path=str(shapes / "v2-rewind"))
    prompts = [m.content for m in trace.messages if m.role == "user"]
    assert "Now write a test for it" not in prompts  # the abandoned attempt
    assert "Now write a real pytest test for it with TestClient" in prompts
    writes = [c for m in trace.messages for c in m.tool_calls if c.name == "Write"]
    assert [c.id for c in writes] == ["toolu_01W2"]
    assert trace.extra["left_out"]["rewind"] == {
        "user": 1, "assistant": 2, "tool_calls": 1, "tool_results": 1
    }  # fmt: skip
    assert run.counts["source.left_out.rewind.assistant"] == 2
    assert answered(trace)
    # the compaction boundary continues the same chain (logicalParentUuid), nothing lost there
    assert prompts[-1] == "Run the tests"
    assert trace.messages[-1].content == "The test passes."


def test_metadata_lines_queued_prompts_documents_and_attachments(read, shapes, run):
    (trace,) = read(path=str(shapes / "v2-rewind"))
    first = trace.messages[0]
    assert first.role == "user" and first.content.startswith("[document]\nThe spec is attached")
    # the prompt typed mid-turn is a user turn, after the result of the call it interrupted
    roles = [m.role for m in trace.messages]
    queued = next(i for i, m in enumerate(trace.messages) if m.extra.get("queued"))
    assert trace.messages[queued].content == "and make it return the version too"
    assert roles[queued - 1] == "tool" and trace.messages[queued - 1].tool_call_id == "toolu_01E1"
    # the caveat and the task notification are metadata, not turns
    assert [m["kind"] for m in trace.extra["meta"]] == [
        "caveat",
        "queued_command.task-notification",
    ]
    assert not any("Caveat" in m.content for m in trace.messages)
    assert trace.extra["left_out"]["meta"] == {"user": 2}
    assert trace.extra["attachments"] == {
        "edited_text_file": 1,
        "hook_additional_context": 1,
        "nested_memory": 1,
        "queued_command": 2,
    }
    assert run.counts["source.attachments.nested_memory"] == 1
    summary = next(m for m in trace.messages if m.extra.get("compact_summary"))
    assert trace.extra["compact_boundaries"] == [trace.messages.index(summary)]


def test_subagent_and_workflow_files_attach_to_their_calls(read, shapes):
    (trace,) = read(path=str(shapes / "v2-workflow"))
    by_agent = {s.provenance.extra["agent_id"]: s for s in trace.subagents}
    assert set(by_agent) == {"a4c1e2", "b9d3"}
    # no meta file and a prompt that differs from the call's: linked by toolUseResult.agentId
    assert by_agent["a4c1e2"].provenance.extra["tool_use_id"] == "toolu_A1"
    workflow = by_agent["b9d3"].provenance.extra
    assert workflow["workflow_run"] == "wf_7q2" and workflow["tool_use_id"] == "toolu_W1"
    assert workflow["agent_type"] == "workflow-subagent"
    assert [c.name for m in by_agent["b9d3"].messages for c in m.tool_calls] == ["Grep"]


def test_tools_carry_claude_codes_schemas_and_inferred_ones_for_the_rest(tmp_path, fixtures):
    source = fixtures / "minimal_transcript.jsonl"
    lines = source.read_text().splitlines()
    extra_call = {
        "type": "assistant",
        "message": {
            "id": "msg_mcp",
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_m1", "name": "mcp__tracker__create_issue",
                 "input": {"title": "x", "labels": ["bug"], "priority": 2}},
                {"type": "tool_use", "id": "toolu_m2", "name": "mcp__tracker__create_issue",
                 "input": {"title": "y"}},
            ],
        },
    }  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines, json.dumps(extra_call)]) + "\n")
    trace = parse_file(path, lambda *a: None)
    assert trace is not None
    tools = {t.name: t for t in trace.tools}
    assert tools["Bash"].parameters["properties"]["command"]["type"] == "string"
    mcp = tools["mcp__tracker__create_issue"].parameters
    assert mcp["required"] == ["title"]  # passed by every call
    assert mcp["properties"]["labels"] == {"type": "array", "items": {"type": "string"}}
    assert mcp["properties"]["priority"] == {"type": "integer"}
    assert "inferred" in tools["mcp__tracker__create_issue"].description


def test_headless_subagent_lines_go_to_the_call_that_spawned_them(tmp_path, fixtures):
    text = (fixtures / "stream_json_tooluse.jsonl").read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    task = {
        "type": "assistant",
        "session_id": "s",
        "message": {"id": "msg_t", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_T", "name": "Task",
             "input": {"description": "d", "prompt": "look"}}]},
    }  # fmt: skip
    sub = [
        {"type": "user", "parent_tool_use_id": "toolu_T",
         "message": {"role": "user", "content": [{"type": "text", "text": "look"}]}},
        {"type": "assistant", "parent_tool_use_id": "toolu_T",
         "message": {"id": "msg_s", "role": "assistant",
                     "content": [{"type": "text", "text": "found it"}]}},
    ]  # fmt: skip
    done = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_T", "content": "found it"}]}}  # fmt: skip
    path = tmp_path / "s.jsonl"
    body = [*lines[:-1], task, *sub, done, lines[-1]]
    path.write_text("\n".join(json.dumps(x) for x in body) + "\n")
    trace = parse_file(path, lambda *a: None)
    assert trace is not None
    (child,) = trace.subagents
    assert child.provenance.extra["tool_use_id"] == "toolu_T"
    assert [m.content for m in child.messages] == ["look", "found it"]
    assert "look" not in [m.content for m in trace.messages if m.role == "user"]


def test_a_csv_named_as_input_is_one_error(read, tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("prompt,response\n" + "".join(f"q{i},a{i}\n" for i in range(300)))
    with pytest.raises(ClaudeCodeInputError, match="is not a Claude Code transcript"):
        read(path=str(csv))


def test_a_non_transcript_jsonl_in_a_folder_is_one_counted_file(read, projects_copy, run):
    other = projects_copy / "-home-dev-todo-api" / "dataset.jsonl"
    other.write_text("".join(json.dumps({"prompt": f"q{i}"}) + "\n" for i in range(200)))
    traces = read(path=str(projects_copy))
    assert len(traces) == 6
    assert run.counts["source.not_transcripts"] == 1
    assert run.counts["source.bad_lines"] == 0  # not one error per line
    assert [n for n in run.notes if "dataset.jsonl" in n] == [
        f"claude-code: {other}: not a Claude Code transcript, skipped"
    ]


@pytest.fixture
def projects_copy(fixtures, tmp_path) -> Path:
    target = tmp_path / "projects"
    shutil.copytree(fixtures / "projects", target)
    return target
