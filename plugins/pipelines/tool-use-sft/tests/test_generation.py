"""tool-use-sft on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
from bashgym_designer.designer import generate
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_designer.rubrics import get_rubric
from bashgym_pipelines_tool_use_sft.options import ToolUseOptions
from bashgym_pipelines_tool_use_sft.pipeline import ToolUseSftPipeline
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from bashgym_testing.server import Reply

from bashgym.contracts import RunContext
from bashgym.settings import Settings

RUBRIC = get_rubric("tool-use")
FENCE = "```json\n{}\n```"


def call(name: str, arguments: dict | str, output: str, thought: str = "Next.") -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"thought": thought, "name": name, "arguments": args, "output": output}


def conversation(final: str, *steps: dict) -> dict:
    return {
        "user_request": "The test_login test fails after my change to auth.py, can you fix it?",
        "steps": list(steps),
        "final_answer": final,
    }


RUN = call("run_command", {"command": "pytest tests/test_auth.py -x"}, "1 failed: KeyError 'exp'")
READ = call("read_file", {"path": "src/auth.py", "start_line": 10}, "def token(user): ...")
GOOD = conversation("Fixed: token() now sets 'exp'; the test passes.", RUN, READ)
LOW = conversation("LOWSCORE I changed nothing.", RUN)
UNKNOWN = conversation("Fixed.", RUN, call("grep_files", {"q": "exp"}, "auth.py:12"))
BAD_ARGS = conversation("Fixed.", RUN, call("read_file", {"file": "src/auth.py"}, "..."))
NO_JSON = conversation("Fixed.", call("run_command", "pytest -x", "ok"))


def is_writer(request) -> bool:
    return "Write one realistic training example" in request.last_user_text


def is_judge(request) -> bool:
    return request.last_user_text.startswith(RUBRIC.instructions)


def judge_reply(request) -> Reply:
    score = 1 if "LOWSCORE" in request.last_user_text else 5
    body = {c: {"reasoning": "scripted", "score": score} for c in RUBRIC.names}
    return Reply(FENCE.format(json.dumps(body)))


def script(server, *conversations: dict) -> None:
    cycle = itertools.cycle(conversations)
    server.add_rule(is_writer, lambda r: Reply(FENCE.format(json.dumps(next(cycle)))))
    server.add_rule(is_judge, judge_reply)


def run_pipeline(scripted_models, options: ToolUseOptions, n: int):
    run = scripted_models.run_context()
    pipeline = ToolUseSftPipeline()
    with run.models:
        builder = pipeline.build(options, run, None)
        gen = generate(
            builder,
            num_records=n,
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    return run, builder, gen, pipeline.finalize(gen.dataset, options, run).dataset


def test_valid_conversations_become_tool_use_rows_the_sink_accepts(scripted_models, tmp_path):
    server = scripted_models.server
    script(server, GOOD, LOW, UNKNOWN, BAD_ARGS, NO_JSON)
    run, builder, gen, rows = run_pipeline(scripted_models, ToolUseOptions(), 10)

    assert len(rows) == 2  # of every five: GOOD kept, LOW below threshold, three invalid
    row = rows.iloc[0]
    messages = row["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant"
    ]  # fmt: skip
    assert messages[0]["content"] == row["system_prompt"] == ToolUseOptions().system_prompt
    assert messages[2]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "run_command",
                "arguments": '{"command": "pytest tests/test_auth.py -x"}',
            },
        }
    ]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "run_command",
        "content": "1 failed: KeyError 'exp'",
    }
    assert messages[-1]["content"] == GOOD["final_answer"]
    tools = json.loads(row["tools"])
    assert "read_file" in [t["function"]["name"] for t in tools]
    assert row["tool_calls"] == 2 and row["difficulty"] in ("easy", "medium", "hard")
    assert {c: v["score"] for c, v in row["judge"].items()} == dict.fromkeys(RUBRIC.names, 5)

    reasons = sorted(d.reason for d in read_drops(gen.artifact_dir))
    assert reasons == sorted(
        2 * ["calls a tool that is not in the tool set"]
        + 4 * ["tool call arguments do not match the tool's JSON schema"]
        + [f"tool-use: {c} below 3" for c in RUBRIC.names][:1] * 2
    )
    assert {d.by for d in read_drops(gen.artifact_dir)} == {"filter tool-use-sft"}
    recorded = {d.reason: d.row for d in read_drops(gen.artifact_dir)}
    check = recorded["calls a tool that is not in the tool set"]["tool_call_check"]
    assert check["unknown_tools"] == "grep_files" and not check["is_valid"]
    # The judge is never asked about a conversation whose calls are invalid.
    judged = [r for r in server.completions if is_judge(r)]
    assert len(judged) == 4
    assert all("grep_files" not in r.last_user_text for r in judged)
    assert '"name": "http_get"' in judged[0].last_user_text  # the judge sees the tool set

    sink_options = NemoJsonlOptions(  # OpenAI's JSON-text arguments: the rows as generated
        path=str(tmp_path / "out"), format="tool-use", val_fraction=0,
        tool_arguments="openai-string",
    )  # fmt: skip
    NemoJsonlSink().write(rows, sink_options, run, ToolUseSftPipeline.output_format)
    lines = [json.loads(x) for x in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and not run.dropped
    assert lines[0]["messages"] == messages and lines[0]["tools"] == tools
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["lines_with_inferred_tools"] == 0  # every call names a declared tool

    config = tmp_path / "config.yaml"
    builder.write_config(config)
    text = config.read_text()
    assert "check_tool_calls" in text and "bashgym-filter" in text


def test_a_tools_file_sets_the_prompt_schema_and_validation(scripted_models, tmp_path):
    weather = {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"enum": ["C", "F"]}},
            "required": ["city"],
        },
    }
    path = Path(tmp_path / "tools.json")
    path.write_text(json.dumps([weather]))
    ok = conversation("It is 21 C.", call("get_weather", {"city": "Paris", "units": "C"}, "21"))
    bad = conversation("It is hot.", call("get_weather", {"city": "Paris", "units": "K"}, "?"))
    script(scripted_models.server, ok, bad, GOOD)  # GOOD calls tools this set lacks
    options = ToolUseOptions(tools_file=str(path), drop_below=False)
    _, _, gen, rows = run_pipeline(scripted_models, options, 4)  # ok, bad, GOOD, ok
    assert [m["content"] for m in rows.iloc[0]["messages"]][-1] == "It is 21 C."
    assert len(rows) == 2 and json.loads(rows.iloc[0]["tools"])[0]["function"] == weather
    reasons = sorted(d.reason for d in read_drops(gen.artifact_dir))
    assert reasons == [
        "calls a tool that is not in the tool set",
        "tool call arguments do not match the tool's JSON schema",
    ]
    writer = next(r for r in scripted_models.server.completions if is_writer(r))
    assert '"get_weather"' in writer.last_user_text and "read_file" not in writer.last_user_text


def test_option_checks():
    with pytest.raises(ValueError, match="min_tool_calls must not exceed max_tool_calls"):
        ToolUseOptions(min_tool_calls=4, max_tool_calls=2)
    with pytest.raises(ValueError, match="scenarios must not be empty"):
        ToolUseOptions(scenarios=[])
    assert all(f.description for f in ToolUseOptions.model_fields.values())


def test_a_row_that_cannot_become_messages_is_handed_back_whole(tmp_path):
    """finalize drops a row whose conversation is missing or whose call arguments are no JSON
    object (the call check drops such rows first in a run; finalize stays safe), counts it as
    before and hands it back whole, for dropped.jsonl."""
    run = RunContext(run_dir=tmp_path, settings=Settings())
    odd = conversation("Fixed.", call("read_file", "[1]", "..."))
    frame = pd.DataFrame({"conversation": [GOOD, None, odd], "domain": ["a", "b", "c"]})
    out = ToolUseSftPipeline().finalize(frame, ToolUseOptions(), run)
    assert list(out.dataset["domain"]) == ["a"]
    assert run.dropped == {
        "tool-use-sft: conversation is missing": 1,
        "tool-use-sft: call 1: arguments are not a JSON object": 1,
    }
    assert [(d.by, d.reason, d.row["domain"]) for d in out.dropped] == [
        ("pipeline tool-use-sft", "conversation is missing", "b"),
        ("pipeline tool-use-sft", "call 1: arguments are not a JSON object", "c"),
    ]
    assert out.dropped[1].row["conversation"] == odd  # as the pipeline had it
