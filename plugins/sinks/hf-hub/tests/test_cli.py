"""`bashgym run --source <traces> --sink hf-hub` end to end, through the real CLI and engine."""

from __future__ import annotations

import json

import datasets
import huggingface_hub
from bashgym_split import split_of

from bashgym import hookimpl
from bashgym.contracts import Source


def test_run_writes_a_loadable_hub_folder_and_pushes(
    bashgym_cli, bashgym_env, register_plugin, make_trace, monkeypatch
):
    traces = [make_trace(i) for i in range(8)]

    class Traces(Source):
        """A few agent traces."""

        output_format = "traces"

        def open(self, options, run):
            return iter(traces)

    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register("test-traces", Traces())

    pushed = []
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda api, *a, **k: None)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda api, **kw: pushed.append(kw))
    monkeypatch.setenv("HF_TOKEN", "hf_cli_s3cr3t")
    register_plugin(Plugin(), "test-traces-plugin")
    out = bashgym_env.workdir / "D"
    result = bashgym_cli(
        "run",
        "--source",
        "test-traces",
        "--sink",
        "hf-hub",
        "--set",
        "sink.val_fraction=0.25",
        "--set",
        "sink.repo_id=me/runs",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    folder = out / f"hf-{out.name}"
    ds = datasets.load_dataset(str(folder), cache_dir=str(bashgym_env.cache_dir / "hf"))
    val_ids = [t.id for t in traces if split_of(t.id, 0, 0.25) == "validation"]
    assert ds["validation"]["trace_id"] == val_ids
    assert len(ds["train"]) == 8 - len(val_ids)
    first = ds["train"][0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "tool", "assistant"]
    assert first[2]["tool_calls"][0]["function"]["arguments"] == {"command": "pytest"}
    assert "trace" not in ds["train"].column_names

    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "ok"
    assert run["counts"]["hf-hub.train"] == 8 - len(val_ids)
    assert run["counts"]["hf-hub.validation"] == len(val_ids)
    assert run["counts"]["hf-hub.pushed"] == 1
    assert pushed and pushed[0]["folder_path"] == str(folder)
    assert pushed[0]["token"] == "hf_cli_s3cr3t"
    card = (folder / "README.md").read_text()
    assert "- source: `test-traces`" in card and "val_fraction = 0.25" in card
    for text in (card, (out / "run.json").read_text(), (out / "run.toml").read_text()):
        assert "hf_cli_s3cr3t" not in text
    assert "hf_cli_s3cr3t" not in result.output


def test_two_runs_folders_load_as_two_datasets_from_one_cache(
    bashgym_cli, bashgym_env, register_plugin, make_trace
):
    """`datasets` names a local dataset after its folder: each run's folder has its own name,
    so a shared HF cache never hands one run's rows back for the other."""
    batches = {"A": [make_trace(i) for i in range(3)], "B": [make_trace(i) for i in range(3, 8)]}

    class Traces(Source):
        """The traces for the run dir of that name."""

        output_format = "traces"

        def open(self, options, run):
            return iter(batches[run.run_dir.name])

    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register("batch-traces", Traces())

    register_plugin(Plugin(), "batch-traces-plugin")
    cache = str(bashgym_env.cache_dir / "hf-shared")
    loaded = {}
    for name in batches:
        out = bashgym_env.workdir / name
        result = bashgym_cli("run", "--source", "batch-traces", "--sink", "hf-hub", "--out", out)
        assert result.exit_code == 0, result.output
        ds = datasets.load_dataset(str(out / f"hf-{name}"), cache_dir=cache)
        loaded[name] = sorted(i for split in ds.values() for i in split["trace_id"])
    assert loaded == {name: sorted(t.id for t in ts) for name, ts in batches.items()}
