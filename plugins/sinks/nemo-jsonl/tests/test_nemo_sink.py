"""The nemo-jsonl sink: every input shape, validation with reasons, the split and atomic files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow.json as pajson
import pytest
from bashgym_sinks_nemo_jsonl import sink as sink_module
from bashgym_sinks_nemo_jsonl.options import DEFAULT_SYSTEM_PROMPT, NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from bashgym_split import split_of

from bashgym.contracts import InputError, RunContext
from bashgym.records import Message, ToolCall, Trace, trace_to_row


def write(run: RunContext, rows: Any, fmt: str = "traces", **options: Any) -> Path:
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    written = NemoJsonlSink().write(frame, NemoJsonlOptions(**options), run, fmt)
    paths = written.paths
    data = [p for p in paths if p.name in ("train.jsonl", "val.jsonl")]
    lines_out = sum(len(p.read_text().splitlines()) for p in data)
    assert written.rows == lines_out  # what it says it wrote is the lines a trainer reads
    assert all(p.read_text() for p in paths)  # no empty file: it breaks loaders
    assert paths[-1].name == "manifest.json"
    assert [p.name for p in paths[:-1]] in (
        ["train.jsonl", "val.jsonl"], ["train.jsonl"], [], ["train.jsonl", "negatives.jsonl"],
        ["train.jsonl", "val.jsonl", "negatives.jsonl"], ["negatives.jsonl"],
    )  # fmt: skip
    return paths[-1].parent


def read(folder: Path, name: str) -> list[dict[str, Any]]:
    if not (folder / name).exists():
        return []
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def lines(folder: Path) -> list[dict[str, Any]]:
    return read(folder, "train.jsonl") + read(folder, "val.jsonl")


def test_tool_use_lines_carry_system_tools_and_matched_calls(run_ctx, make_trace):
    folder = write(run_ctx, [trace_to_row(make_trace(i)) for i in range(6)], val_fraction=0.5)
    assert folder == run_ctx.run_dir / "nemo-jsonl"
    out = lines(folder)
    assert len(out) == 6
    for line in out:
        msgs = line["messages"]
        assert msgs[0] == {"role": "system", "content": "You are Claude Code, a coding agent."}
        assert [m["role"] for m in msgs[1:]] == [
            "user", "assistant", "tool", "assistant", "tool", "tool", "assistant"
        ]  # fmt: skip
        assert msgs[-1]["content"].startswith("Fixed:") and "tool_calls" not in msgs[-1]
        assert [t["function"]["name"] for t in line["tools"]] == ["Read", "Bash"]
        assert line["tools"][1]["function"]["parameters"]["required"] == ["command"]
        calls = [c for m in msgs for c in m.get("tool_calls", [])]
        answered = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
        assert [c["id"] for c in calls] == answered and len(calls) == 3
        assert calls[0]["function"] == {"name": "Read", "arguments": {"file_path": "auth.py"}}
        assert calls[0]["type"] == "function"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["counts"]["train"] + manifest["counts"]["val"] == 6
    assert manifest["input"] == "traces" and manifest["format"] == "tool-use"
    assert manifest["split"]["key"] == {"trace_id": 6} and manifest["split"]["seed"] == 7
    assert (
        manifest["lines_with_inferred_tools"] == 0
        and "nemo-jsonl.tools_inferred" not in run_ctx.counts
    )
    assert run_ctx.counts["nemo-jsonl.train"] == manifest["counts"]["train"]
    assert not list(folder.glob(".*.tmp"))


def test_outputs_read_back_with_datasets_and_pyarrow(run_ctx, make_trace, tmp_path):
    folder = write(run_ctx, [trace_to_row(make_trace(i)) for i in range(5)], val_fraction=0.0)
    train = folder / "train.jsonl"
    table = pajson.read_json(train)
    assert table.num_rows == 5 and set(table.column_names) == {"messages", "tools"}
    ds = datasets.load_dataset(
        "json", data_files={"train": str(train)}, split="train", cache_dir=str(tmp_path / "hf")
    )
    assert len(ds) == 5
    assert ds[0]["messages"][0]["role"] == "system"
    assert ds[0]["messages"][2]["tool_calls"][0]["function"]["name"] == "Read"
    assert read(folder, "val.jsonl") == []  # val_fraction 0: an empty, present val file


def test_default_system_prompt_and_inferred_tools_when_the_trace_lacks_them(run_ctx, make_trace):
    bare = make_trace(1, system_prompt=None, tools=False)
    folder = write(run_ctx, [trace_to_row(bare)], val_fraction=0)
    (line,) = lines(folder)
    assert line["messages"][0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert "coding agent" in DEFAULT_SYSTEM_PROMPT
    assert [t["function"]["name"] for t in line["tools"]] == ["Read", "Bash"]
    # inferred from the arguments the calls pass, not an empty stub
    assert line["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    }
    assert run_ctx.counts["nemo-jsonl.tools_inferred"] == 1
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["lines_with_inferred_tools"] == 1
    custom = write(run_ctx, [trace_to_row(bare)], default_system_prompt="Be terse.")
    assert lines(custom)[0]["messages"][0]["content"] == "Be terse."


def test_chat_format_keeps_text_turns_and_skips_traces_without_final_text(run_ctx, make_trace):
    rows = [trace_to_row(make_trace(1)), trace_to_row(make_trace(2, final=None))]
    folder = write(run_ctx, rows, format="chat", val_fraction=0)
    (line,) = lines(folder)
    assert "tools" not in line
    assert line["messages"] == [
        {"role": "system", "content": "You are Claude Code, a coding agent."},
        {"role": "user", "content": "Fix the failing test #1 in auth.py"},
        {"role": "assistant", "content": "I'll read it first.\n\n" + FINAL},
    ]
    assert run_ctx.dropped == {"sink nemo-jsonl: chat: no final assistant text": 1}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["dropped_examples"] == {
        "sink nemo-jsonl: chat: no final assistant text": ["trace-2"]
    }


FINAL = "Fixed: the token check now compares in constant time."


def broken(i: int, messages: list[Message]) -> dict[str, Any]:
    # No system prompt on the trace: openai_messages() then keeps every system message.
    return trace_to_row(Trace(id=f"bad-{i}", messages=messages))


def call(cid: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=cid, name="Bash")])


USER = Message(role="user", content="do it")


@pytest.mark.parametrize(
    "messages,reason",
    [
        ([USER, call("c1")], "tool call has no tool result"),
        ([USER, call("c1"), Message(role="tool", tool_call_id="c1", content="ok")],
         "last message is not the assistant's"),
        ([USER, call("c1"), Message(role="assistant", content="done")],
         "tool call has no tool result"),
        ([USER, Message(role="tool", tool_call_id="zz", content="?"),
          Message(role="assistant", content="done")],
         "tool message answers no pending tool call"),
        ([USER], "last message is not the assistant's"),
        ([USER, Message(role="assistant", content="  ")], "final assistant message is empty"),
        ([Message(role="assistant", content="hi")], "assistant speaks before any user message"),
        ([], "no messages"),
    ],
)  # fmt: skip
def test_invalid_conversations_are_dropped_with_a_reason(run_ctx, make_trace, messages, reason):
    folder = write(run_ctx, [trace_to_row(make_trace(0)), broken(1, messages)])
    assert len(lines(folder)) == 1
    # an empty message list still gets the system prompt, so it fails as "last message ..."
    expected = "last message is not the assistant's" if reason == "no messages" else reason
    assert run_ctx.dropped == {f"sink nemo-jsonl: {expected}": 1}


def test_a_mid_conversation_system_message_stays_in_place_or_drops_the_line(run_ctx):
    """Codex sends developer instructions mid-session: kept where they were (OpenAI chat allows
    it, Qwen's and Llama's templates render it), or, for a template that refuses them, the
    line is dropped with its reason; never moved or lost silently."""
    late = Message(
        role="system", content="Approval policy is now never.", extra={"codex_role": "developer"}
    )
    trace = Trace(
        id="codex-1",
        system_prompt="You are Codex.",
        messages=[USER, Message(role="assistant", content="on it"), late,
                  Message(role="user", content="go on"), Message(role="assistant", content="done")],
    )  # fmt: skip
    for fmt in ("tool-use", "chat"):
        (line,) = lines(write(run_ctx, [trace_to_row(trace)], format=fmt, val_fraction=0))
        assert [(m["role"], m["content"]) for m in line["messages"]] == [
            ("system", "You are Codex."),
            ("user", "do it"),
            ("assistant", "on it"),
            ("system", "Approval policy is now never."),
            ("user", "go on"),
            ("assistant", "done"),
        ]
    folder = write(
        run_ctx, [trace_to_row(trace)], mid_conversation_system="drop-line", val_fraction=0
    )
    assert lines(folder) == []
    assert run_ctx.dropped == {"sink nemo-jsonl: system message not first": 1}


def test_a_row_that_is_not_a_trace_is_dropped_not_fatal(run_ctx, make_trace):
    rows = [trace_to_row(make_trace(0)), {**trace_to_row(make_trace(1)), "trace": "{not json"}]
    folder = write(run_ctx, rows)
    assert len(lines(folder)) == 1
    assert run_ctx.dropped == {"sink nemo-jsonl: trace column does not hold a valid Trace": 1}


def ids(folder: Path, name: str) -> set[str]:
    return {line["messages"][1]["content"] for line in read(folder, name)}


def test_split_is_deterministic_order_free_and_resume_safe(run_ctx, make_trace, tmp_path):
    rows = [trace_to_row(make_trace(i)) for i in range(40)]
    a = write(run_ctx, rows, val_fraction=0.25, path=str(tmp_path / "a"))
    shuffled = pd.DataFrame(rows).sample(frac=1, random_state=3)
    b = write(run_ctx, shuffled, val_fraction=0.25, path=str(tmp_path / "b"))
    assert ids(a, "train.jsonl") == ids(b, "train.jsonl")
    assert ids(a, "val.jsonl") == ids(b, "val.jsonl")
    assert 0 < len(ids(a, "val.jsonl")) < 40
    # The side is the hash of the trace id under the run seed: nothing about the batch.
    for i in range(40):
        side = "val.jsonl" if split_of(f"trace-{i}", 7, 0.25) == "validation" else "train.jsonl"
        assert f"Fix the failing test #{i} in auth.py" in ids(a, side)
    # A resumed job that first saw only some rows put each of them on the same side.
    part = write(run_ctx, rows[:13], val_fraction=0.25, path=str(tmp_path / "part"))
    assert ids(part, "val.jsonl") <= ids(a, "val.jsonl")
    assert ids(part, "train.jsonl") <= ids(a, "train.jsonl")
    # Re-running gives byte-identical files; another seed gives another split.
    again = write(run_ctx, rows, val_fraction=0.25, path=str(tmp_path / "again"))
    for name in ("train.jsonl", "val.jsonl", "manifest.json"):
        assert (again / name).read_bytes() == (a / name).read_bytes()
    other = write(run_ctx, rows, val_fraction=0.25, seed=99, path=str(tmp_path / "other"))
    assert ids(other, "val.jsonl") != ids(a, "val.jsonl")


def test_chat_rows_from_json_text_or_lists_with_tools_and_system(run_ctx):
    convo = [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": "Bash", "arguments": {"command": "ls"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "a.py"},
        {"role": "assistant", "content": "One file: a.py"},
    ]  # fmt: skip
    tools = [{"name": "Bash", "description": "shell", "parameters": {"type": "object"}}]
    rows = [
        {"id": "r1", "messages": json.dumps(convo), "tools": json.dumps(tools)},
        {"id": "r2", "messages": convo, "tools": None, "system_prompt": "Row system."},
        {"id": "r3", "messages": "not json", "tools": None},
    ]
    folder = write(run_ctx, rows, fmt="chat", val_fraction=0)
    first, second = lines(folder)
    assert first["messages"][0]["content"] == DEFAULT_SYSTEM_PROMPT
    assert first["messages"][1] == {"role": "user", "content": "list files"}
    assert first["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}
    assert first["tools"] == [{"type": "function", "function": tools[0]}]
    assert second["messages"][0] == {"role": "system", "content": "Row system."}
    assert second["tools"][0]["function"]["name"] == "Bash"  # inferred from the call
    assert run_ctx.dropped == {"sink nemo-jsonl: messages is not valid JSON": 1}


def test_prompt_response_rows_with_configurable_fields(run_ctx):
    rows = [
        {"q": "What is 2+2?", "a": "4", "record_id": "x"},
        {"q": "Empty?", "a": "", "record_id": "y"},
    ]
    folder = write(run_ctx, rows, fmt="rows", prompt_field="q", response_field="a", val_fraction=0)
    assert lines(folder) == [
        {
            "messages": [  # no system prompt: a Q&A row is no agent's (test_system_prompt.py)
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4"},
            ]
        }
    ]
    assert run_ctx.dropped == {"sink nemo-jsonl: rows: empty response": 1}
    assert json.loads((folder / "manifest.json").read_text())["format"] == "chat"


def test_missing_columns_are_a_config_error_before_writing(run_ctx):
    with pytest.raises(InputError, match=r"rows input needs column\(s\) \['response'\]"):
        write(run_ctx, [{"prompt": "p"}], input="rows")
    with pytest.raises(InputError, match="cannot tell what the rows are"):
        write(run_ctx, [{"colour": "red"}], fmt="samples")
    # a task list (-s prompts): says what to do with prompts that have no answers yet
    with pytest.raises(InputError, match=r"prompts with no answers .*\(-p coding-agent-sft\)"):
        write(run_ctx, [{"prompt": "fix the bug", "source_file": "tasks.txt"}], fmt="rows")
    with pytest.raises(InputError, match="chosen_score"):
        write(run_ctx, [{"prompt": "p", "chosen": "a", "rejected": "b"}], fmt="dpo", min_margin=1)
    assert not (run_ctx.run_dir / "nemo-jsonl" / "train.jsonl").exists()


def test_auto_input_guesses_from_columns(run_ctx, make_trace):
    folder = write(run_ctx, [trace_to_row(make_trace(0))], fmt="rows")  # e.g. a files source
    assert json.loads((folder / "manifest.json").read_text())["input"] == "traces"
    assert lines(folder)[0]["tools"]


PAIRS = [
    {"id": "p1", "prompt": "Sort a list", "chosen": "sorted(xs)", "rejected": "xs.sort",
     "chosen_score": 9.0, "rejected_score": 3.0},
    {"id": "p2", "prompt": "Reverse", "chosen": "xs[::-1]", "rejected": "xs[::-1]",
     "chosen_score": 5.0, "rejected_score": 5.0},
    {"id": "p3", "prompt": "Sum", "chosen": "sum(xs)", "rejected": "reduce(add, xs)",
     "chosen_score": 7.0, "rejected_score": 7.0},
    {"id": "p4", "prompt": "Max", "chosen": "max(xs)", "rejected": "sorted(xs)[-1]",
     "chosen_score": 6.0, "rejected_score": 5.5},
]  # fmt: skip


def test_dpo_trl_and_nemo_rl_text_shapes_and_tie_rules(run_ctx):
    folder = write(run_ctx, PAIRS, fmt="dpo", val_fraction=0)
    assert lines(folder) == [
        {"prompt": "Sort a list", "chosen": "sorted(xs)", "rejected": "xs.sort"},
        {"prompt": "Max", "chosen": "max(xs)", "rejected": "sorted(xs)[-1]"},
    ]
    assert run_ctx.dropped == {
        "sink nemo-jsonl: dpo: chosen and rejected are identical": 1,  # p2
        "sink nemo-jsonl: dpo: chosen does not score above rejected": 1,  # p3, a tie: no signal
    }
    run_ctx.dropped.clear()
    margin = write(run_ctx, PAIRS, fmt="dpo", dpo_format="nemo-rl", min_margin=1, val_fraction=0)
    assert [line["prompt"] for line in lines(margin)] == ["Sort a list"]
    assert set(lines(margin)[0]) == {"prompt", "chosen", "rejected"}
    assert run_ctx.dropped["sink nemo-jsonl: dpo: score margin below min_margin"] == 2  # p3, p4


def test_dpo_conversational_and_rank_shapes(run_ctx):
    prompt = [
        {"role": "user", "content": "Write add()"},
        {"role": "assistant", "content": "In which file?"},
        {"role": "user", "content": "math.py"},
    ]
    rows = [
        {"id": "c1", "prompt": json.dumps(prompt), "chosen": "def add(a, b): return a + b",
         "rejected": [{"role": "assistant", "content": "no"}], "system_prompt": "Sys."},
    ]  # fmt: skip
    conv = lines(write(run_ctx, rows, fmt="dpo", dpo_format="trl-conversational", val_fraction=0))
    assert conv == [
        {
            "prompt": [{"role": "system", "content": "Sys."}, *prompt],
            "chosen": [{"role": "assistant", "content": "def add(a, b): return a + b"}],
            "rejected": [{"role": "assistant", "content": "no"}],
        }
    ]
    rank = lines(write(run_ctx, rows, fmt="dpo", dpo_format="nemo-rl-rank", val_fraction=0))
    assert rank == [
        {
            "context": conv[0]["prompt"],
            "completions": [
                {"rank": 0, "completion": conv[0]["chosen"]},
                {"rank": 1, "completion": conv[0]["rejected"]},
            ],
        }
    ]
    # A multi-turn prompt has no text-only form: dropped with a reason, not flattened.
    assert lines(write(run_ctx, rows, fmt="dpo", dpo_format="trl")) == []
    assert run_ctx.dropped == {
        "sink nemo-jsonl: dpo: multi-turn pair needs a conversational dpo_format, not trl": 1
    }


def test_keep_fields_subagents_and_openai_string_arguments(run_ctx, make_trace):
    parent = make_trace(1)
    parent.subagents = [make_trace(2, system_prompt="You are a subagent.")]
    rows = [trace_to_row(parent)]
    folder = write(
        run_ctx,
        rows,
        include_subagents=True,
        keep_fields=["trace_id", "model"],
        tool_arguments="openai-string",
        val_fraction=0,
    )
    main, sub = lines(folder)
    assert main["trace_id"] == sub["trace_id"] == "trace-1"  # same record, same split
    assert main["model"] == "claude-sonnet"
    assert sub["messages"][0]["content"] == "You are a subagent."
    call = main["messages"][2]["tool_calls"][0]["function"]
    assert call["arguments"] == '{"file_path": "auth.py"}'  # JSON text, as OpenAI sends it
    assert NemoJsonlOptions(tool_arguments="json-string").tool_arguments == "openai-string"


def test_a_failed_write_leaves_the_previous_files_whole(run_ctx, make_trace, monkeypatch):
    rows = [trace_to_row(make_trace(i)) for i in range(4)]
    folder = write(run_ctx, rows, val_fraction=0)
    before = (folder / "train.jsonl").read_bytes()
    real = sink_module.lines_of
    seen = []

    def explode(row, shape, options):
        seen.append(row)
        if len(seen) == 3:
            raise RuntimeError("disk full")
        return real(row, shape, options)

    monkeypatch.setattr(sink_module, "lines_of", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        write(run_ctx, rows + rows, val_fraction=0)
    assert (folder / "train.jsonl").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "train.jsonl"]


def test_a_failed_tasks_trace_is_dropped_with_its_cause(run_ctx, make_trace):
    """An executor's row that did not succeed is never an SFT line; its reason is the drop's."""
    ok, failed = trace_to_row(make_trace(1)), trace_to_row(make_trace(2))
    ok.update(status="success", reason=None)
    failed.update(id="t-2", status="timeout", reason="deadline passed (30 s)")
    written = NemoJsonlSink().write(pd.DataFrame([ok, failed]), NemoJsonlOptions(), run_ctx, "")
    assert written.rows == 1
    assert run_ctx.dropped == {"sink nemo-jsonl: task timeout: deadline passed (30 s)": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "a.py", "n": 1.5, "tags": ["x"]}', {"path": "a.py", "n": 1.5, "tags": ["x"]}),
        ('{"n": 123456789012345678901234567890}', {"n": 123456789012345678901234567890}),
        ('{"x": NaN}', "nan"),  # json reads NaN, orjson does not: read as before
    ],
)
def test_tool_arguments_are_read_as_json_reads_them(text, expected):
    """Arguments are parsed by orjson for speed, with json's reading kept where they differ."""
    from bashgym_sinks_nemo_jsonl.shapes import _arguments_object

    value = _arguments_object(text)
    if expected == "nan":
        assert value["x"] != value["x"]
    else:
        assert value == json.loads(text) == expected
