"""`-j filter` on source rows with no pipeline: the real `bashgym run` command, its rows kept and
dropped as the rules say (the judge names its runner, as every judge adding DataDesigner
processors must)."""

from __future__ import annotations

import json

import pandas as pd


def test_filter_judges_source_rows_without_a_pipeline(bashgym_cli, bashgym_env, tmp_path):
    pd.DataFrame(
        {
            "prompt": ["hello there friend", "hi", "what is two plus two", "ok"],
            "response": ["hi", "yo", "four", "sure"],
        }
    ).to_csv(bashgym_env.workdir / "qa.csv", index=False)
    rules = json.dumps([{"keep": "{{ prompt|length > 5 }}", "reason": "short"}])
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", "source.path=qa.csv", "-j", "filter",
        "--set", f"judge.rules={rules}", "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "names no runner" not in result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok"
    assert summary["counts"]["kept"] == 2
    assert summary["counts"]["dropped"] == {"filter filter: short": 2}
    kept = pd.read_parquet(out / "data.parquet")
    assert sorted(kept["prompt"]) == ["hello there friend", "what is two plus two"]
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert sorted((d["by"], d["reason"], d["row"]["prompt"]) for d in dropped) == [
        ("filter filter", "short", "hi"),
        ("filter filter", "short", "ok"),
    ]


def test_every_judge_adding_to_the_builder_names_its_runner(bashgym_host):
    """A judge whose `configure` adds DataDesigner columns or processors runs on a runner; one
    that names none cannot run without a pipeline (the kernel refuses it)."""
    from bashgym.contracts import Judge

    registry = bashgym_host.registry
    for name in registry.names("judges"):
        judge = registry.get("judges", name).obj
        if type(judge).configure is not Judge.configure:
            assert getattr(judge, "runner", None) == "datadesigner", name
