"""Tool schemas of Codex traces, and what a hostile rollout can put in run.json.

Why these tests: the source once listed every called tool by name alone, so each line's `tools`
showed `{"properties": {}}` while the calls passed `cmd`, `workdir`, `yield_time_ms`, and the
nemo-jsonl sink took those stubs for declarations and never inferred them. And a rollout's item
type became a count name of its own: a token there reached run.json and the hf-hub card (the
event bus now redacts it, which still leaves a `[REDACTED:...]` count per hostile file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_sources_codex.rollout import read_rollout
from bashgym_sources_codex.source import CodexOptions, CodexSource

from bashgym.contracts import RunContext
from bashgym.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "codex"
TOKEN = "ghp_" + "R8kq2WmZ4vXb7Nc1Lp9Ty3Hd6Gs0Jf5Ae2Ku"  # shaped like a GitHub token


def _line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2025-11-20T03:08:12.000Z", "type": kind, "payload": payload})


def _rollout(path: Path, *items: dict[str, Any]) -> Path:
    meta = {"id": "019a0000-0000-7000-8000-000000000001", "cli_version": "0.63.0"}
    lines = [
        _line("session_meta", meta),
        _line("response_item", _message("user", "Look at the notes.")),
        *(_line("response_item", item) for item in items),
        _line("response_item", _message("assistant", "Done.")),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _message(role: str, text: str) -> dict[str, Any]:
    part = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


def _output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


@pytest.fixture
def run(tmp_path: Path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    value = call["function"]["arguments"]
    return json.loads(value) if isinstance(value, str) else value


def test_example_lines_declare_every_parameter_their_calls_pass(bashgym_cli, bashgym_env):
    out = bashgym_env.workdir / "cx"
    result = bashgym_cli(
        "run", "-s", "codex", "--set", f"source.path={EXAMPLES}", "-k", "nemo-jsonl",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [
        json.loads(text)
        for name in ("train.jsonl", "val.jsonl")
        for text in (out / "nemo-jsonl" / name).read_text().splitlines()
    ]
    called = set()
    for line in lines:
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in line["tools"]}
        for message in line["messages"]:
            for call in message.get("tool_calls", []):
                name, args = call["function"]["name"], _arguments(call)
                called.add(name)
                properties = tools[name]["properties"]
                assert properties, f"{name}: empty schema"
                assert set(args) <= set(properties), (name, sorted(args), sorted(properties))
                assert set(tools[name].get("required", [])) <= set(args)
    assert called == {"exec_command", "shell", "apply_patch"}
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    assert manifest["lines_with_inferred_tools"] == 0  # every one is Codex's own, described


def test_unknown_tools_are_left_out_and_new_parameters_added(run, tmp_path):
    path = _rollout(
        tmp_path / "rollout-tools.jsonl",
        _call("mcp__notes__search", {"query": "x"}, "c1"),
        _output("c1"),
        _call("exec_command", {"cmd": "ls", "new_flag": True}, "c2"),
        _output("c2"),
        {"type": "custom_tool_call", "name": "grep_text", "input": "TODO", "call_id": "c3"},
        {"type": "custom_tool_call_output", "call_id": "c3", "output": "none"},
        _call("update_plan", {"plan": [{"step": "read", "status": "completed"}]}, "c4"),
        _output("c4"),
    )
    tools = {t.name: t for t in read_rollout(path).trace.tools}
    # an MCP tool Codex does not describe: left for the sink to infer (and count)
    assert sorted(tools) == ["exec_command", "grep_text", "update_plan"]
    exec_props = tools["exec_command"].parameters["properties"]
    assert exec_props["cmd"]["type"] == "string"
    assert exec_props["new_flag"] == {"type": "boolean"}  # a newer CLI's parameter
    assert tools["grep_text"].parameters["required"] == ["input"]  # freeform: {input: text}
    assert tools["update_plan"].parameters["required"] == ["plan"]


def test_unknown_tools_are_inferred_by_the_sink(bashgym_cli, bashgym_env):
    folder = bashgym_env.workdir / "in"
    folder.mkdir()
    _rollout(
        folder / "rollout-mcp.jsonl",
        _call("mcp__notes__search", {"query": "x"}, "c1"),
        _output("c1"),
    )
    out = bashgym_env.workdir / "mcp"
    result = bashgym_cli(
        "run", "-s", "codex", "--set", f"source.path={folder}", "-k", "nemo-jsonl",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [text] = (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()
    [tool] = json.loads(text)["tools"]
    assert tool["function"]["parameters"]["properties"] == {"query": {"type": "string"}}
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    assert manifest["lines_with_inferred_tools"] == 1


def test_a_dynamic_tool_named_without_a_schema_is_not_a_declaration(tmp_path):
    path = tmp_path / "rollout-dyn.jsonl"
    meta = {"id": "s1", "dynamic_tools": [{"name": "shell"}, {"name": "lookup"}]}
    lines = [
        _line("session_meta", meta),
        _line("response_item", _message("user", "hi")),
        _line("response_item", _call("shell", {"command": ["ls"]}, "c1")),
        _line("response_item", _call("lookup", {"key": "k"}, "c2")),
    ]
    path.write_text("\n".join(lines) + "\n")
    tools = {t.name: t for t in read_rollout(path).trace.tools}
    assert sorted(tools) == ["shell"]  # Codex's own schema; `lookup` is left to the sink
    assert tools["shell"].parameters["required"] == ["command"]


def test_unknown_item_types_count_under_a_fixed_name(run, tmp_path):
    path = _rollout(
        tmp_path / "rollout-odd.jsonl",
        {"type": TOKEN, "data": 1},
        {"type": "web_search_call", "status": "completed"},
        {"type": TOKEN, "data": 2},
    )
    assert len(list(CodexSource().open(CodexOptions(path=str(path)), run))) == 1
    assert not [name for name in run.counts if TOKEN in name]
    assert run.counts["source.skipped_items.other"] == 2
    assert run.counts["source.skipped_items.web_search_call"] == 1
    assert [n for n in run.notes if "is not known" in n] == [
        f"codex: {path}: response item type {TOKEN!r} is not known: skipped, counted as "
        "source.skipped_items.other"
    ]


def test_hostile_names_never_reach_run_json(bashgym_cli, bashgym_env):
    folder = bashgym_env.workdir / "in"
    folder.mkdir()
    _rollout(folder / "rollout-a.jsonl", {"type": TOKEN})
    empty = folder / f"rollout-2025-11-20T03-08-12-{TOKEN}.jsonl"
    empty.write_text(_line("session_meta", {"id": "s2"}) + "\n")  # no dialogue: dropped
    out = bashgym_env.workdir / "leak"
    result = bashgym_cli(
        "run", "-s", "codex", "--set", f"source.path={folder}", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "run.json").read_text())
    assert report["counts"]["source.skipped_items.other"] == 1
    assert report["counts"]["dropped"] == {"codex: rollout has no user or assistant message": 1}
    for name in ("run.json", "events.jsonl"):
        assert TOKEN not in (out / name).read_text(), name
