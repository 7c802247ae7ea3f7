"""A DataDesigner config file runs as a pipeline: `bashgym run --pipeline my_config.yaml` and
`bashgym validate my_config.yaml`; the shipped examples are such files."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from bashgym_testing.server import Reply


def test_an_exported_pipeline_runs_from_its_file(bashgym_cli, scripted_models, tmp_path):
    config = tmp_path / "sft.yaml"
    exported = bashgym_cli("pipeline", "export", "coding-agent-sft", str(config))
    assert exported.exit_code == 0, exported.output
    # portable: DataDesigner's own column types, no BashGym plugin needed to run it
    assert "bashgym-" not in config.read_text() and "pip install" not in exported.stderr
    top = {"reasoning": "fine", "score": 5}
    verdict = {name: top for name in ("correctness", "tool_usage", "completeness")}
    scripted_models.server.add_rule("JudgeStructuredOutput", Reply(json.dumps(verdict)))
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "--pipeline", str(config), "-n", "2", "-k", "parquet", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["plugins"]["pipeline"]["name"] == "datadesigner-config"
    assert summary["counts"]["kept"] == 2
    rows = pd.read_parquet(out / "data.parquet")
    assert {"task_prompt", "trajectory", "quality"} <= set(rows.columns)
    # the file's providers are BashGym aliases: requests went to the scripted server
    assert {r.model for r in scripted_models.server.completions} >= {"scripted-default"}


@pytest.mark.parametrize(
    "name",
    ["samplers", "coding-agent-sft", "coding-agent-dpo", "from-external", "from-unstructured"],
)
def test_the_shipped_example_configs_validate(bashgym_cli, repo, monkeypatch, name):
    monkeypatch.chdir(repo)  # their seed paths are relative to the repository
    result = bashgym_cli("validate", f"examples/pipelines/{name}.yaml")
    assert result.exit_code == 0, result.output
    assert "valid:" in result.stdout


def test_a_broken_config_file_is_one_line(bashgym_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data_designer:\n  columns: 3\n")
    result = bashgym_cli(
        "run", "--pipeline", str(bad), "-k", "parquet", "--out", str(tmp_path / "r")
    )
    assert result.exit_code == 2
    assert "not a valid DataDesigner config" in result.output
    missing = bashgym_cli("run", "--pipeline", str(tmp_path / "nope.yaml"), "-k", "parquet")
    assert missing.exit_code == 2 and "unknown pipeline" not in missing.output  # it names a file
    assert f"pipeline file '{tmp_path / 'nope.yaml'}' does not exist" in missing.output
    checked = bashgym_cli("validate", str(tmp_path / "nope.yaml"))
    assert checked.exit_code == 2 and "does not exist" in checked.output
