"""The hf-hub folder loads with the real `datasets` whatever the rows hold (mixed-type columns,
JSONL splits where a column is null in one split only), and its card and terminal lines hold no
secret a user put in a sink option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pytest
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.sink import HfHubSink, default_folder
from bashgym_split import loadable, score, split_of
from bashgym_testing.tokens import github_token as token

from bashgym.contracts import RunContext
from bashgym.records import trace_to_row

NESTED = [{"a": [1, 2]}, [1, 2], "plain", None]


def write(run: RunContext, frame: pd.DataFrame, fmt: str, **options: Any) -> Path:
    written = HfHubSink().write(frame, HfHubOptions(**options), run, fmt)
    assert written.rows == len(frame)
    return default_folder(run.run_dir)


def load(folder: Path, tmp_path: Path) -> datasets.DatasetDict:
    return datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))


@pytest.mark.parametrize("file_format", ["parquet", "jsonl"])
def test_mixed_columns_load_as_text_and_are_named_in_a_note(run_ctx, tmp_path, file_format):
    frame = pd.DataFrame(
        {
            "id": ["r0", "r1", "r2", "r3"],
            "response": ["x", 42, 1.5, None],
            "nested": NESTED,
            "n": [1, 2, 3, 4],
        }
    )
    folder = write(run_ctx, frame, "rows", val_fraction=0.5, file_format=file_format)
    ds = load(folder, tmp_path)
    rows = {r["id"]: r for split in ds.values() for r in split}
    assert [rows[f"r{i}"]["response"] for i in range(4)] == ["x", "42", "1.5", None]
    nested = [rows[f"r{i}"]["nested"] for i in range(4)]
    assert [None if v is None else json.loads(v) for v in nested] == NESTED
    assert [rows[f"r{i}"]["n"] for i in range(4)] == [1, 2, 3, 4]
    assert ds["train"].features["n"] == datasets.Value("int64")
    (note,) = [n for n in run_ctx.notes if "mixes" in n]
    assert note.startswith("hf-hub: ")
    assert "`response` mixes text, integer and number values: stored as text" in note
    assert "`nested` mixes object, list and text values: stored as JSON text" in note


def test_jsonl_rows_with_a_column_null_in_one_split_load(run_ctx, tmp_path):
    """JSON files carry no schema: each split's reader would type an all-null column as null
    and refuse the other split's booleans, so the card declares the features."""
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "success": [None, None],
            "when": pd.to_datetime(["2024-01-02T03:04:05", "2024-02-03T04:05:06"]),
            "meta": [{"k": 1, "v": None}, {"k": 2, "v": "x"}],
            "tags": [["a"], []],
        }
    )
    sides = write(run_ctx, frame, "rows", val_fraction=0.5, file_format="jsonl")
    lines = {p.name: p.read_text() for p in (sides / "data").iterdir()}
    assert len(lines) == 2  # one row per split
    # fill `success` in the validation row only: null in train, true in validation
    val = sides / "data" / "validation-00000-of-00001.jsonl"
    val_id = json.loads(val.read_text())["id"]
    frame["success"] = [True if i == val_id else None for i in frame["id"]]
    folder = write(run_ctx, frame, "rows", val_fraction=0.5, file_format="jsonl")
    ds = load(folder, tmp_path)
    assert ds["validation"]["success"] == [True] and ds["train"]["success"] == [None]
    rows = {r["id"]: r for split in ds.values() for r in split}
    assert rows["b"]["meta"] == {"k": 2, "v": "x"} and rows["a"]["tags"] == ["a"]
    assert str(rows["a"]["when"]).startswith("2024-01-02")


def test_jsonl_trace_rows_with_success_null_in_train_load(run_ctx, make_trace, tmp_path):
    """The reported case: codex traces as JSONL, `success` null in the train row and true in
    the validation row (`Couldn't cast array of type bool to null` before)."""
    traces = [make_trace(0), make_trace(1)]
    seed, share = run_ctx.seed, HfHubOptions().val_fraction
    ids = [t.id for t in traces]
    sides = loadable([split_of(i, seed, share) for i in ids], [score(i, seed) for i in ids], share)
    for trace, side in zip(traces, sides, strict=True):  # null in the split read first
        trace.outcome.success = None if side == "train" else True
    folder = write(
        run_ctx, pd.DataFrame([trace_to_row(t) for t in traces]), "traces", file_format="jsonl"
    )
    ds = load(folder, tmp_path)
    assert sorted(x for split in ds.values() for x in split["success"] if x is not None) == [True]
    first = ds["train"][0]["messages"]
    assert first[2]["tool_calls"][0]["function"]["arguments"] == {"command": "pytest"}


def test_card_and_terminal_hold_no_secret_from_sink_options(bashgym_cli, bashgym_env):
    name, tag, repo = token(), token(), token()
    source = bashgym_env.workdir / "rows.jsonl"
    source.write_text('{"prompt": "a", "response": "x"}\n{"prompt": "b", "response": "y"}\n')
    out = bashgym_env.workdir / "R"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={source}", "-k", "hf-hub",
        "--set", f"sink.pretty_name=Data with key {name}",
        "--set", f'sink.tags=["{tag}"]',
        "--set", f"sink.repo_id=me/{repo}",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = out / f"hf-{out.name}"
    card = (folder / "README.md").read_text()
    written = [card, *(p.read_text() for p in out.glob("*.json*")), result.output]
    for text in written:
        for secret in (name, tag, repo):
            assert secret not in text
    assert "[REDACTED:" in card
    data = huggingface_hub_card(folder)
    assert data.pretty_name.startswith("Data with key [REDACTED:")
    assert all(isinstance(t, str) for t in data.tags)  # a redacted tag is still one tag
    assert load(folder, bashgym_env.cache_dir)["train"].num_rows >= 1
    # the dry-run note is shown once, as a note line (redacted by the run's events)
    assert result.output.count("dry run, nothing pushed") == 1, result.output


def huggingface_hub_card(folder: Path) -> Any:
    from huggingface_hub import DatasetCard

    return DatasetCard.load(folder / "README.md").data
