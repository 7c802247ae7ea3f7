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
    assert "is not a valid DataDesigner pipeline config: data_designer.columns:" in result.output
    missing = bashgym_cli("run", "--pipeline", str(tmp_path / "nope.yaml"), "-k", "parquet")
    assert missing.exit_code == 2 and "unknown pipeline" not in missing.output  # it names a file
    assert f"pipeline file '{tmp_path / 'nope.yaml'}' does not exist" in missing.output
    checked = bashgym_cli("validate", str(tmp_path / "nope.yaml"))
    assert checked.exit_code == 2 and "does not exist" in checked.output


def test_the_samplers_example_says_nothing_of_model_configs_it_never_had(
    bashgym_cli, repo, tmp_path
):
    """The file's columns call no model: the DataDesigner default model configs it is built with
    (written to DATA_DESIGNER_HOME by a first run, as on any user's machine) are removed, and
    DataDesigner's warning on removing the last ("openrouter-embedding") is not printed."""
    example = repo / "examples" / "pipelines" / "samplers.yaml"
    home = tmp_path / "dd-home"  # this test's own (the suite's other runs set one of theirs)
    env = {"DATA_DESIGNER_HOME": str(home)}

    def run(out):
        args = ("run", "--pipeline", str(example), "-n", "5", "-k", "parquet", "--out", str(out))
        result = bashgym_cli.subprocess(*args, env=env)
        assert result.exit_code == 0, result.output
        assert len(pd.read_parquet(out / "data.parquet")) == 5
        return result

    first = run(tmp_path / "first")
    defaults = home / "model_configs.yaml"
    assert "openrouter-embedding" in defaults.read_text()  # the configs there are to remove
    checked = bashgym_cli.subprocess("validate", str(example), env=env)
    assert checked.exit_code == 0, checked.output
    assert "valid: 2 columns" in checked.stdout
    for result in (first, checked, run(tmp_path / "again")):
        assert "No model configurations" not in result.output, result.output
        assert "openrouter" not in result.output and "⚠️" not in result.output, result.output


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("x.yaml", "foo: 1\nbar: 2\n", "no `data_designer` section (its top-level keys: foo, bar"),
        ("list.yaml", "- 1\n", "it holds a list, where a `data_designer:` section"),
        ("empty.yaml", "", "it holds nothing, where a `data_designer:` section"),
        ("other.json", '{"name": "x"}', "it has no `data_designer` section"),
    ],
)  # fmt: skip
def test_a_file_that_is_no_pipeline_config_is_said_so_in_plain_words(
    bashgym_cli, tmp_path, name, text, says
):
    config = tmp_path / name
    config.write_text(text)
    for args in (("validate", str(config)), ("run", "--pipeline", str(config), "-k", "parquet")):
        result = bashgym_cli(*args)
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert f"{config} is not a DataDesigner pipeline config: " in message, message
        assert says in message, message
        for jargon in ("BuilderConfig", "Field required", "Traceback", "ValueError", "⚠️"):
            assert jargon not in result.output, result.output


def test_a_file_that_is_not_yaml_names_the_line(bashgym_cli, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("data_designer:\n  columns: [\n")
    result = bashgym_cli("validate", str(bad))
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert f"{bad} could not be read as YAML: line 3: " in message, message
    assert "ParserError" not in message and "Traceback" not in result.output


def test_a_missing_path_says_how_to_set_it(bashgym_cli):
    result = bashgym_cli("validate", "datadesigner-config")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "path: required: set pipeline.path=FILE to a DataDesigner config file" in message
    assert "Field required" not in message
    listed = bashgym_cli("options", "pipeline", "datadesigner-config", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {row["option"]: row for row in json.loads(listed.stdout)["options"]}
    assert rows["pipeline.path"]["required"] is True  # still a required option
