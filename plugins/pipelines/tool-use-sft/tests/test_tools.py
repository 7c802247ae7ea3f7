"""The tool set: defaults, a user's JSON file, and checking calls against the schemas."""

from __future__ import annotations

import json

import pytest
from bashgym_pipelines_tool_use_sft.reshape import NotAConversation, to_messages
from bashgym_pipelines_tool_use_sft.tools import DEFAULT_TOOLS, ToolSet, load_tools

from bashgym.contracts import InputError


def conversation(*calls: tuple[str, str], final: str = "Done.") -> dict:
    return {
        "user_request": "Why does the test fail?",
        "steps": [
            {"thought": "Let me look.", "name": n, "arguments": a, "output": "ok"} for n, a in calls
        ],
        "final_answer": final,
    }


def test_default_tool_set_is_a_coding_agent_one_with_strict_schemas():
    tools = load_tools(None)
    names = [t["function"]["name"] for t in tools]
    assert names == [
        "read_file", "write_file", "edit_file", "list_dir", "search_code", "run_command",
        "http_get",
    ]  # fmt: skip
    for tool in tools:
        assert tool["type"] == "function" and tool["function"]["description"]
        params = tool["function"]["parameters"]
        assert params["additionalProperties"] is False and params["required"]
    assert tools == DEFAULT_TOOLS


def test_a_tools_file_replaces_the_defaults(tmp_path):
    weather = {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps([{"type": "function", "function": weather}]))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"tools": [weather]}))  # bare functions are accepted too
    assert load_tools(str(listed)) == load_tools(str(wrapped))
    assert load_tools(str(listed))[0] == {"type": "function", "function": weather}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not valid JSON"),
        ('{"a": 1}', "must hold a list"),
        ("[]", "the tool set is empty"),
        ('[{"name": "x y"}]', "needs a name"),
        ('[{"name": "a"}, {"name": "a"}]', "duplicate tool names \\['a'\\]"),
        ('[{"name": "a", "parameters": {"type": "string"}}]', "must be a JSON Schema object"),
        ('[{"name": "a", "parameters": {"type": "object", "required": 3}}]', "invalid schema"),
    ],
)
def test_bad_tools_files_are_input_errors(tmp_path, content, message):
    path = tmp_path / "tools.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_tools(str(path))
    with pytest.raises(InputError, match="does not exist"):
        load_tools(str(tmp_path / "missing.json"))


def test_calls_are_checked_against_the_tool_schemas():
    tools = ToolSet(load_tools(None))
    ok = tools.check(conversation(("read_file", '{"path": "a.py", "start_line": 3}')))
    assert ok.is_valid and ok.as_cell()["errors"] == ""

    unknown = tools.check(conversation(("grep_files", '{"q": "x"}'), ("list_dir", '{"path": "."}')))
    assert unknown.unknown_tools == ["grep_files"] and not unknown.argument_errors

    bad = tools.check(
        conversation(
            ("read_file", '{"file": "a.py"}'),  # renamed parameter: required missing + extra
            ("run_command", '{"command": "ls", "timeout_s": "60"}'),  # wrong type
            ("list_dir", "path=."),  # not JSON
            ("write_file", '["a.py"]'),  # not an object
        )
    )
    cell = bad.as_cell()
    assert not cell["is_valid"] and cell["unknown_tools"] == ""
    errors = cell["argument_errors"]
    assert "call 1 (read_file) arguments: 'path' is a required property" in errors
    assert "Additional properties are not allowed ('file' was unexpected)" in errors
    assert "call 2 (run_command) timeout_s: '60' is not of type 'integer'" in errors
    assert "call 3 (list_dir)" in errors and "call 4 (write_file)" in errors

    empty = tools.check({"user_request": "", "steps": [], "final_answer": " "})
    assert empty.structure_errors == ["empty user request", "empty final answer", "no tool calls"]
    assert tools.check(None).structure_errors == ["conversation is missing"]
    assert tools.check(json.dumps(conversation(("list_dir", '{"path": "."}')))).is_valid


def test_conversations_become_openai_tool_use_messages():
    conv = conversation(
        ("list_dir", '{ "path" : "." }'),
        ("read_file", '{"path": "a.py"}'),
        ("run_command", '{"command": "pytest"}'),
    )
    conv["steps"][1]["same_turn_as_previous"] = True  # a parallel call joins the first turn
    conv["steps"][2].update(thought="Run it.", output="1 passed")
    messages = to_messages(conv, "SYSTEM")
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant"
    ]  # fmt: skip
    first = messages[2]
    assert first["content"] == "Let me look." and len(first["tool_calls"]) == 2
    assert first["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_dir", "arguments": '{"path": "."}'},  # canonical JSON text
    }
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
        "call_1", "call_2", "call_3"
    ]  # fmt: skip
    assert messages[5]["content"] == "Run it."
    assert messages[6] == {
        "role": "tool", "tool_call_id": "call_3", "name": "run_command", "content": "1 passed"
    }  # fmt: skip
    assert messages[-1] == {"role": "assistant", "content": "Done."}
    with pytest.raises(NotAConversation, match="no tool calls"):
        to_messages({"user_request": "x", "steps": [], "final_answer": "y"}, "S")
    with pytest.raises(NotAConversation, match="call 1: arguments are not a JSON object"):
        to_messages(conversation(("list_dir", "[1]")), "S")
