"""What the sink writes loads as it is: `datasets` reads the splits the manifest names, a failed
session is never an SFT target, and ATIF results without ids keep their traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pytest
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink

from bashgym.records import Message, Outcome, trace_to_row


def write(run_ctx, rows: list[dict[str, Any]], **options: Any) -> tuple[Path, dict[str, Any]]:
    written = NemoJsonlSink().write(pd.DataFrame(rows), NemoJsonlOptions(**options), run_ctx, "")
    folder = written.paths[-1].parent
    return folder, json.loads((folder / "manifest.json").read_text())


def load(folder: Path, manifest: dict[str, Any], cache: Path) -> datasets.DatasetDict:
    """As a user would: every split file the manifest names, none it leaves out."""
    files = {
        split: str(folder / name)
        for split, name in (("train", manifest["files"]["train"]),
                            ("validation", manifest["files"]["val"]))
        if name
    }  # fmt: skip
    return datasets.load_dataset("json", data_files=files, cache_dir=str(cache))


@pytest.mark.parametrize("val_fraction", [0.05, 1.0])
def test_every_split_written_loads_and_two_records_fill_both(
    run_ctx, make_trace, tmp_path, val_fraction
):
    for n in (1, 2, 3):
        rows = [trace_to_row(make_trace(i)) for i in range(n)]
        out = tmp_path / f"{val_fraction}-{n}"
        folder, manifest = write(run_ctx, rows, val_fraction=val_fraction, path=str(out))
        ds = load(folder, manifest, tmp_path / "hf")
        sizes = {split: len(part) for split, part in ds.items()}
        assert sum(sizes.values()) == n
        if n == 1:
            assert sizes == {"train": 1} and not (folder / "val.jsonl").exists()
            assert manifest["files"]["val"] is None
            assert manifest["split"]["note"] == "no validation file: one record, kept for train"
        else:
            assert sizes["train"] >= 1 and sizes["validation"] >= 1
            assert manifest["counts"] == {"train": sizes["train"], "val": sizes["validation"]}


def test_a_repaired_split_is_deterministic_and_moves_the_nearest_record(run_ctx, make_trace):
    rows = [trace_to_row(make_trace(i)) for i in range(4)]
    a, first = write(run_ctx, rows, val_fraction=0.01, path=str(run_ctx.run_dir / "a"))
    b, again = write(run_ctx, rows[::-1], val_fraction=0.01, path=str(run_ctx.run_dir / "b"))
    assert first["split"]["moved"] == again["split"]["moved"] and len(first["split"]["moved"]) == 1
    val = [json.loads(x)["messages"][1]["content"] for x in (a / "val.jsonl").open()]
    assert val == [json.loads(x)["messages"][1]["content"] for x in (b / "val.jsonl").open()]
    assert first["counts"] == {"train": 3, "val": 1}


def test_val_fraction_zero_writes_no_validation_file_and_says_so(run_ctx, make_trace, tmp_path):
    rows = [trace_to_row(make_trace(i)) for i in range(3)]
    folder, manifest = write(run_ctx, rows, val_fraction=0)
    assert list(load(folder, manifest, tmp_path / "hf")) == ["train"]
    assert manifest["split"]["note"] == "no validation file: val_fraction is 0"


def api_error_trace(make_trace):
    """A Claude Code session that ended on `API Error: 529 overloaded` (as the source reads it)."""
    trace = make_trace(9)
    message = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'
    trace.messages.append(Message(role="user", content="and the docs?"))
    trace.messages.append(Message(role="assistant", content=message))
    trace.outcome = Outcome(success=False, error_kind="api_error", error_message=message)
    return trace


def test_a_session_ending_on_an_api_error_is_no_sft_target(run_ctx, make_trace, tmp_path):
    rows = [trace_to_row(make_trace(1)), trace_to_row(api_error_trace(make_trace))]
    folder, manifest = write(run_ctx, rows, val_fraction=0)
    ds = load(folder, manifest, tmp_path / "hf")
    assert len(ds["train"]) == 1
    assert not any("API Error" in m["content"] for m in ds["train"][0]["messages"])
    reason = "sink nemo-jsonl: trace did not succeed (api_error)"
    assert run_ctx.dropped == {reason: 1} and manifest["dropped"] == {reason: 1}
    # kept apart as a negative (a DPO rejected answer), never in a split
    (negative,) = [json.loads(x) for x in (folder / "negatives.jsonl").open()]
    assert negative["messages"][-1]["content"].startswith("API Error: 529")
    assert manifest["negatives"]["lines"] == 1 == run_ctx.counts["nemo-jsonl.negatives"]
    # a user who wants every trace says so
    folder, manifest = write(run_ctx, rows, val_fraction=0, success_only=False, path=str(tmp_path))
    assert len(load(folder, manifest, tmp_path / "hf")["train"]) == 2
    assert not (tmp_path / "negatives.jsonl").exists()


def test_atif_results_without_tool_call_ids_pair_by_position(run_ctx, make_trace, tmp_path):
    """Harbor's terminus-2 writes results with no `source_call_id`; the atif source keeps them
    unpaired when it cannot tell. The line pairs them with their turn's calls in order."""
    trace = make_trace(3)
    for message in trace.messages:
        if message.role == "tool":
            message.tool_call_id = None
    folder, manifest = write(run_ctx, [trace_to_row(trace)], val_fraction=0)
    assert manifest["dropped"] == {} and manifest["counts"]["train"] == 1
    (line,) = load(folder, manifest, tmp_path / "hf")["train"]
    calls = [c["id"] for m in line["messages"] for c in (m.get("tool_calls") or [])]
    answers = [m["tool_call_id"] for m in line["messages"] if m["role"] == "tool"]
    assert calls == answers == ["call_3_a", "call_3_b", "call_3_c"]
    # a result with no call left to answer is still refused, with its reason
    trace.messages.insert(3, Message(role="tool", content="stray"))
    _, manifest = write(run_ctx, [trace_to_row(trace)], val_fraction=0, path=str(tmp_path / "x"))
    assert manifest["dropped"] == {"sink nemo-jsonl: tool message without tool_call_id": 1}
