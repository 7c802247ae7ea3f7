"""A failed trace that is no valid SFT line as it stands still writes its negative: a task
stopped mid-action (the student's repetition stop: its last turn a tool call with no result)
is cut after that turn, and one that cannot be cut into a valid conversation is counted, by
reason, in the manifest; the trace itself is dropped once, for its failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bashgym.records import Message, Outcome, Provenance, ToolCall, ToolSchema, Trace, trace_to_row

REASON = (
    'model student repeated the same tool call(s) 3 turns in a row: run_command {"command": "ls"}'
)
CALL = '<tool_call>\n{"name": "'  # a rendered call, not the format hint in the tools preamble
RUN_COMMAND = ToolSchema(
    name="run_command",
    description="Run a shell command in the project folder.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)


def repeated_ls(task: str = "Repeat test") -> Trace:
    """The student executor's trace of a task it stopped for repetition (`repeat_limit` 3), as
    run.json's run s2 holds it: three `ls` calls, the last one never run, no text at all."""
    calls = [f"call_{n:024d}" for n in (10, 12, 14)]
    messages = [Message(role="user", content=task)]
    for i, call in enumerate(calls):
        ls = ToolCall(id=call, name="run_command", arguments='{"command": "ls"}')
        messages.append(Message(role="assistant", content="", tool_calls=[ls]))
        if i < 2:
            messages.append(Message(role="tool", tool_call_id=call, content="exit code: 0\n"))
    return Trace(
        id=task,
        messages=messages,
        tools=[RUN_COMMAND],
        outcome=Outcome(success=False, error_kind="repetition", error_message=REASON, num_turns=3),
        provenance=Provenance(source="executor", executor="student", model="scripted-student"),
    )


def render(template: str, line: dict[str, Any]) -> str:
    """As transformers' apply_chat_template renders it (see test_chat_template.py)."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = lambda value, indent=None: json.dumps(
        value, ensure_ascii=False, indent=indent
    )
    return env.from_string(template).render(
        messages=line["messages"], tools=line.get("tools"), add_generation_prompt=False
    )


def row(trace: Trace, status: str = "failed", reason: str = REASON) -> dict[str, Any]:
    return {**trace_to_row(trace), "status": status, "reason": reason}


def write(run_ctx: Any, rows: list[dict[str, Any]], **options: Any) -> tuple[Path, dict[str, Any]]:
    written = NemoJsonlSink().write(pd.DataFrame(rows), NemoJsonlOptions(**options), run_ctx, "")
    folder = written.paths[-1].parent
    return folder, json.loads((folder / "manifest.json").read_text())


def test_a_task_stopped_mid_action_writes_its_negative_up_to_its_last_call(
    run_ctx, make_trace, tmp_path, qwen_template
):
    rows = [row(make_trace(1), "success", ""), row(repeated_ls())]
    folder, manifest = write(run_ctx, rows, val_fraction=0)
    dropped = f"sink nemo-jsonl: task failed: {REASON}"
    assert run_ctx.dropped == {dropped: 1} and manifest["dropped"] == {dropped: 1}  # once
    assert manifest["counts"] == {"train": 1, "val": 0}
    negatives = manifest["negatives"]
    assert (negatives["file"], negatives["lines"], negatives["cut_short"]) == (
        "negatives.jsonl", 1, 1
    )  # fmt: skip
    assert negatives["not_written"] == {} and run_ctx.counts["nemo-jsonl.negatives"] == 1
    (line,) = datasets.load_dataset(
        "json", data_files=str(folder / "negatives.jsonl"), cache_dir=str(tmp_path / "hf")
    )["train"]
    roles = [m["role"] for m in line["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    last = line["messages"][-1]
    assert [c["id"] for c in last["tool_calls"]] == ["call_000000000000000000000014"]
    assert [t["function"]["name"] for t in line["tools"]] == ["run_command"]
    # the agent's last action renders as the last thing said, in the student's own template
    text = render(qwen_template, json.loads((folder / "negatives.jsonl").read_text()))
    assert text.count(CALL) == 3 and text.rstrip().endswith("</tool_call><|im_end|>")


def test_a_trace_that_ends_after_a_tool_result_is_cut_after_the_call(run_ctx):
    """Stopped at max_turns right after a result: the result the agent never read goes."""
    trace = repeated_ls()
    trace.messages.append(
        Message(role="tool", tool_call_id="call_000000000000000000000014", content="a.txt\n")
    )
    folder, manifest = write(run_ctx, [row(trace, "failed", "max_turns 3 reached")])
    (line,) = [json.loads(x) for x in (folder / "negatives.jsonl").open()]
    assert line["messages"][-1]["role"] == "assistant" and manifest["negatives"]["cut_short"] == 1


def test_a_failed_trace_with_no_valid_cut_is_counted_by_reason(run_ctx):
    """A stray result before the last call: no cut of it is a valid conversation."""
    trace = repeated_ls()
    trace.messages.insert(2, Message(role="tool", tool_call_id="nobody", content="stray"))
    no_answer = repeated_ls("Answer nothing")
    no_answer.messages = no_answer.messages[:1]  # the model never answered
    rows = [row(trace), row(no_answer, "error", "model unreachable")]
    folder, manifest = write(run_ctx, rows)
    assert manifest["dropped"] == {
        f"sink nemo-jsonl: task failed: {REASON}": 1,
        "sink nemo-jsonl: task error: model unreachable": 1,
    }
    negatives = manifest["negatives"]
    assert (negatives["file"], negatives["lines"]) == (None, 0)
    assert negatives["not_written"] == {
        "tool message answers no pending tool call": 1,
        "no assistant turn": 1,
    }
    assert run_ctx.counts["nemo-jsonl.negatives_not_written"] == 2
    assert not (folder / "negatives.jsonl").exists()


def test_chat_format_and_negatives_off_write_no_cut_line(run_ctx, tmp_path):
    _, manifest = write(run_ctx, [row(repeated_ls())], format="chat")
    assert manifest["negatives"]["not_written"] == {"chat: no final assistant text": 1}
    _, manifest = write(run_ctx, [row(repeated_ls())], negatives=False, path=str(tmp_path / "n"))
    assert manifest["negatives"] == {**manifest["negatives"], "lines": 0, "not_written": {}}
    assert not (tmp_path / "n" / "negatives.jsonl").exists()
