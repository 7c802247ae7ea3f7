"""The hf-hub sink: Hub layout that `datasets` loads by split, the generated card, the push."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import huggingface_hub
import pandas as pd
import pyarrow.parquet as pq
import pytest
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.sink import HfHubSink, default_folder
from bashgym_split import split_of
from huggingface_hub import DatasetCard

from bashgym.contracts import RunContext
from bashgym.records import trace_from_row, trace_to_row

RUN_TOML = """seed = 3
out = "/home/alice/secret-project/runs/r1"

[source]
plugin = "claude-code"
path = "/home/alice/.claude/projects"
max_files = 10

[[sinks]]
plugin = "hf-hub"
val_fraction = 0.25
"""


def write(run: RunContext, rows: Any, fmt: str = "traces", **options: Any) -> list[Path]:
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    written = HfHubSink().write(frame, HfHubOptions(**options), run, fmt)
    assert written.rows == len(frame)  # every row lands in one split
    return written.paths


def load(folder: Path, tmp_path: Path) -> datasets.DatasetDict:
    return datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))


def test_folder_loads_back_with_the_right_splits_and_rows(run_ctx, make_trace, tmp_path):
    traces = [make_trace(i) for i in range(20)]
    paths = write(run_ctx, [trace_to_row(t) for t in traces], val_fraction=0.25, include_trace=True)
    folder = default_folder(run_ctx.run_dir)
    assert [p.relative_to(folder).as_posix() for p in paths] == [
        "data/train-00000-of-00001.parquet",
        "data/validation-00000-of-00001.parquet",
        "README.md",
    ]
    ds = load(folder, tmp_path)
    assert set(ds) == {"train", "validation"}
    expected = {
        s: [t.id for t in traces if split_of(t.id, 3, 0.25) == s] for s in ("train", "validation")
    }
    assert expected["validation"] and expected["train"]
    for split, ids in expected.items():
        assert ds[split]["trace_id"] == ids
    by_id = {t.id: t for t in traces}
    for split in ds:
        for row in ds[split]:
            assert trace_from_row(row) == by_id[row["trace_id"]]  # include_trace: lossless
    assert run_ctx.counts["hf-hub.train"] == len(expected["train"])
    assert not list(folder.rglob(".*.tmp"))


def test_card_front_matter_and_body(run_ctx, make_trace):
    (run_ctx.run_dir / "run.toml").write_text(RUN_TOML)
    run_ctx.count("generated", 5)
    run_ctx.drop("judge ruff: lint errors", 2)
    write(
        run_ctx,
        [trace_to_row(make_trace(i)) for i in range(5)],
        val_fraction=0.5,
        tags=["agents"],
        pretty_name="Agent runs",
    )
    readme = default_folder(run_ctx.run_dir) / "README.md"
    card = DatasetCard.load(readme)
    assert card.data.license == "other"
    assert card.data.pretty_name == "Agent runs"
    assert card.data.task_categories == ["text-generation"]
    assert card.data.tags == ["bashgym", "synthetic", "traces", "agents"]
    assert card.data.size_categories == ["n<1K"]
    assert card.data.configs == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "data/train-*.parquet"},
                {"split": "validation", "path": "data/validation-*.parquet"},
            ],
        }
    ]
    body = card.text
    n_train = run_ctx.counts["hf-hub.train"]
    assert f"| train | {n_train} |" in body and f"| validation | {5 - n_train} |" in body
    assert "- source: `claude-code` (2 options)" in body and "- sink: `hf-hub`" in body
    assert 'path = ".../projects"' in body and "max_files = 10" in body
    assert "alice" not in readme.read_text()  # local paths shortened, `out` left out
    assert "Output format: `traces`" in body and "TRL's SFTTrainer" in body
    assert "| dropped: judge ruff: lint errors | 2 |" in body
    assert "ids from `trace_id` (5)" in body and "seed 3" in body


def test_card_without_run_toml_still_says_how_it_was_made(run_ctx):
    write(run_ctx, [{"id": 1, "prompt": "p", "response": "r"}], fmt="rows", license="mit")
    card = DatasetCard.load(default_folder(run_ctx.run_dir) / "README.md")
    assert card.data.license == "mit" and card.data.pretty_name == "run"
    assert "No run.toml was found" in card.text and "`rows`" in card.text
    # val_fraction 0.05 of one row: no validation split, and no config pointing at nothing.
    assert [f["split"] for f in card.data.configs[0]["data_files"]] == ["train"]


def test_jsonl_shards_and_stale_shards_removed(run_ctx, tmp_path):
    rows = [{"id": f"r{i}", "prompt": f"p{i}", "n": i} for i in range(10)]
    folder = tmp_path / "out"
    opts = {"fmt": "rows", "path": str(folder), "val_fraction": 0}
    write(run_ctx, rows, max_shard_rows=3, **opts)
    names = sorted(p.name for p in (folder / "data").iterdir())
    assert names == [f"train-0000{i}-of-00004.parquet" for i in range(4)]
    # A second write into the same folder leaves no shard of the first one to be read again.
    write(run_ctx, rows, max_shard_rows=5, file_format="jsonl", **opts)
    names = sorted(p.name for p in (folder / "data").iterdir())
    assert names == ["train-00000-of-00002.jsonl", "train-00001-of-00002.jsonl"]
    ds = load(folder, tmp_path)
    assert sorted(ds["train"]["n"]) == list(range(10)) and set(ds) == {"train"}


def test_a_column_null_in_one_split_only_still_loads(run_ctx, tmp_path):
    # cost is missing on every validation row here: each split's files still share one schema.
    rows = [
        {"id": f"r{i}", "cost": None if split_of(f"r{i}", 3, 0.3) == "validation" else 1.5}
        for i in range(30)
    ]
    write(run_ctx, rows, fmt="rows", val_fraction=0.3, max_shard_rows=4)
    folder = default_folder(run_ctx.run_dir)
    shard = next((folder / "data").glob("validation-*"))
    assert str(pq.read_schema(shard).field("cost").type) == "double"
    ds = load(folder, tmp_path)
    assert set(ds["validation"]["cost"]) == {None} and set(ds["train"]["cost"]) == {1.5}


class FakeHub:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []
        for method in ("create_repo", "upload_folder"):
            monkeypatch.setattr(huggingface_hub.HfApi, method, self._record(method))

    def _record(self, method: str):
        def fake(api, *args, **kwargs):
            self.calls.append((method, args, kwargs))

        return fake


def test_push_with_repo_and_token_from_the_named_env_var(run_ctx, make_trace, monkeypatch):
    hub = FakeHub(monkeypatch)
    monkeypatch.setenv("MY_HF_TOKEN", "hf_s3cr3t_value")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    paths = write(
        run_ctx, [trace_to_row(make_trace(0))], repo_id="me/agent-runs", token_env="MY_HF_TOKEN"
    )
    folder = default_folder(run_ctx.run_dir)
    assert hub.calls == [
        (
            "create_repo",
            ("me/agent-runs",),
            {"repo_type": "dataset", "private": True, "exist_ok": True, "token": "hf_s3cr3t_value"},
        ),
        (
            "upload_folder",
            (),
            {
                "repo_id": "me/agent-runs",
                "folder_path": str(folder),
                "repo_type": "dataset",
                "token": "hf_s3cr3t_value",
                "commit_message": "BashGym run run",
            },
        ),
    ]
    assert run_ctx.counts["hf-hub.pushed"] == 1
    assert run_ctx.notes == (
        f"hf-hub: pushed {folder} to https://huggingface.co/datasets/me/agent-runs",
    )
    for path in paths:
        assert b"hf_s3cr3t_value" not in path.read_bytes()
    assert 'load_dataset("me/agent-runs")' in (folder / "README.md").read_text()


@pytest.mark.parametrize(
    "options,env,missing",
    [
        ({"repo_id": "me/x"}, {}, "$HF_TOKEN not set"),
        ({}, {"HF_TOKEN": "hf_tok"}, "sink.repo_id not set"),
        ({}, {}, "sink.repo_id and $HF_TOKEN not set"),
    ],
)
def test_dry_run_without_repo_or_token(
    run_ctx, make_trace, monkeypatch, capsys, options, env, missing
):
    hub = FakeHub(monkeypatch)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    write(run_ctx, [trace_to_row(make_trace(0))], **options)
    assert hub.calls == []
    (note,) = run_ctx.notes
    assert f"dry run, nothing pushed ({missing})" in note and "would upload 2 files" in note
    # not printed by the sink: the display shows the run's notes once, redacted
    assert capsys.readouterr().err == ""
    assert "hf_tok" not in note
    assert "hf-hub.pushed" not in run_ctx.counts
    assert json.loads(json.dumps(run_ctx.notes))  # plain text, fit for run.json
