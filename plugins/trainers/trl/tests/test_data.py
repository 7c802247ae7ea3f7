"""What `bashgym train` reads from a run: its JSONL found through run.json, lines checked (no
training extra needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bashgym_trainers_trl import load_dataset

from bashgym.contracts import InputError


def test_the_runs_jsonl_is_found_and_bad_lines_counted(tmp_path: Path, make_run) -> None:
    data = load_dataset(make_run(tmp_path / "run", n=5))
    assert len(data.train) == 5 and len(data.validation) == 1
    assert data.skipped == {"last message is not the assistant's": 1}
    assert data.train[0]["messages"][-1]["role"] == "assistant"


def test_a_copied_run_dir_is_read_beside_its_run_json(tmp_path: Path, make_run) -> None:
    make_run(tmp_path / "run", n=3)
    shutil.move(tmp_path / "run", tmp_path / "copy")  # run.json still names the old place
    assert len(load_dataset(tmp_path / "copy").train) == 3


def test_tool_calls_arguments_become_objects_for_the_template(tmp_path: Path, make_run) -> None:
    run = make_run(tmp_path / "run", n=1)
    call = {"id": "c1", "type": "function",
            "function": {"name": "Read", "arguments": '{"file_path": "a.py"}'}}  # fmt: skip
    line = {"messages": [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "assistant", "content": "It sets x."}],
        "tools": [{"type": "function", "function": {"name": "Read"}}]}  # fmt: skip
    (run / "nemo-jsonl" / "train.jsonl").write_text(json.dumps(line) + "\n")
    row = load_dataset(run).train[0]
    assert row["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"file_path": "a.py"}
    assert row["messages"][1]["content"] == "" and row["tools"]


def test_a_run_without_chat_jsonl_says_which_sink_writes_it(tmp_path: Path, make_run) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(json.dumps({"outputs": {"parquet": ["x.parquet"]}}))
    with pytest.raises(InputError, match="--sink nemo-jsonl"):
        load_dataset(tmp_path / "run")
    with pytest.raises(InputError, match=r"no run\.json"):
        load_dataset(tmp_path)


def test_a_train_file_with_nothing_trainable_is_refused(tmp_path: Path, make_run) -> None:
    run = make_run(tmp_path / "run", n=1)
    (run / "nemo-jsonl" / "train.jsonl").write_text('{"messages": []}\nnot json\n')
    with pytest.raises(InputError, match=r"no trainable conversation.*1 not JSON"):
        load_dataset(run)
