"""The `code` judge: its options, and the validation columns and filter it adds, through real
DataDesigner runs (and the exported config run by the `data-designer` CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from bashgym_designer.designer import (
    PLACEHOLDER_PROVIDER,
    generate,
    seed_frame,
)
from bashgym_designer.drops import read_drops
from bashgym_designer.models import model_config, providers_for
from bashgym_designer.testing import ready_settings, seeded
from bashgym_designer.validation import CodeValidationColumnConfig, tool_name
from bashgym_judges_code import CodeJudge, CodeOptions
from pydantic import ValidationError

from bashgym.contracts import RunContext
from bashgym.settings import Settings

GOOD_PY = "def f(x):\n    return x + 1\n"
BAD_PY = "def f(:\n    pass\n"


@pytest.fixture
def settings(tmp_path):
    return ready_settings(tmp_path)


def test_options_are_checked():
    with pytest.raises(ValidationError, match="at least 1 item"):
        CodeOptions(targets={})
    with pytest.raises(ValidationError, match="cannot validate language"):
        CodeOptions(targets={"code": "brainfuck"})
    assert CodeOptions(targets={"code": "bash"}).drop_invalid is True


def test_two_targets_with_mixed_validity_are_not_copied_from_row_zero(tmp_path, settings):
    # DataDesigner's own multi-target validation copies row 0's result for the second target:
    # here row 0 is valid in `a` and invalid in `b`, and the other rows differ from row 0.
    builder = seeded(
        {
            "a": [GOOD_PY, BAD_PY, GOOD_PY, BAD_PY],
            "b": [BAD_PY, GOOD_PY, GOOD_PY, BAD_PY],
        }
    )
    judge = CodeJudge()
    options = CodeOptions(targets={"a": "python", "b": "python"}, drop_invalid=False)
    judge.configure(builder, options, RunContext(run_dir=tmp_path, settings=settings))
    data = generate(builder, num_records=4, run_dir=tmp_path, settings=settings).dataset
    assert [c["is_valid"] for c in data["a_validation"]] == [True, False, True, False]
    assert [c["is_valid"] for c in data["b_validation"]] == [False, True, True, False]


def test_judge_drops_invalid_rows_with_reasons(tmp_path, settings, bashgym_host):
    judge = bashgym_host.registry.get("judges", "code").obj
    assert isinstance(judge, CodeJudge)
    builder = seeded(
        {
            "id": [0, 1, 2, 3],
            "solution": [GOOD_PY, BAD_PY, GOOD_PY, GOOD_PY],
            "command": ["ls", "echo ok", "if then fi", "echo done"],
        }
    )
    options = CodeOptions(targets={"solution": "python", "command": "bash"})
    judge.configure(builder, options, RunContext(run_dir=tmp_path, settings=settings))
    result = generate(builder, num_records=4, run_dir=tmp_path, settings=settings)
    assert sorted(result.dataset["id"]) == [0, 3]
    drops = sorted(read_drops(result.artifact_dir), key=lambda d: d.row["id"])
    assert [(d.by, d.reason, d.row["id"]) for d in drops] == [
        ("filter code", "code: python in solution fails ruff", 1),
        ("filter code", f"code: bash in command fails {tool_name('bash')}", 2),
    ]
    assert drops[1].row["command_validation"]["is_valid"] is False


def exported_config(folder: Path) -> Path:
    """A config file (no Python inside) with a file seed, an expression column that drops one
    row (empty render), python and bash validation columns and the code filter."""
    import data_designer.config as dd

    seed = folder / "seed.jsonl"
    pd.DataFrame(
        {
            "id": [0, 1, 2, 3, 4],
            "x": ["print(1)", "", "x = (", "print(3)", "```python\nprint(4)\n```"],
            "sh": ["ls", "echo one", "echo two", "if then fi", "echo done"],
        }
    ).to_json(seed, orient="records", lines=True)
    builder = dd.DataDesignerConfigBuilder(model_configs=[])
    builder.with_seed_dataset(dd.LocalFileSeedSource(path=str(seed)))
    builder.add_column(dd.ExpressionColumnConfig(name="code", expr="{{ x }}"))
    CodeJudge().configure(
        builder,
        CodeOptions(targets={"code": "python", "sh": "shell"}),
        RunContext(run_dir=folder, settings=Settings(cache_dir=folder / "cache")),
    )
    path = folder / "c.yaml"
    builder.write_config(path)
    return path


def check_exported_run(dataset: list[dict], artifact_dir: Path) -> None:
    """Row 1 is dropped upstream (empty expression), 2 and 3 by the filter; 0 and 4 stay."""
    assert [row["id"] for row in dataset] == [0, 4]
    assert [row["code_validation"]["is_valid"] for row in dataset] == [True, True]
    assert {row["sh_validation"]["language"] for row in dataset} == {"bash"}
    drops = sorted(read_drops(artifact_dir), key=lambda d: d.row["id"])
    assert [(d.by, d.reason, d.row["id"]) for d in drops] == [
        ("filter code", "code: python in code fails ruff", 2),
        ("filter code", f"code: bash in sh fails {tool_name('bash')}", 3),
    ]
    assert drops[0].row["code_validation"]["python_linter_severity"] == "fatal"
    assert "unexpected token" in drops[1].row["sh_validation"]["error_messages"]


def test_config_with_validations_serializes_loads_back_and_runs(tmp_path, settings):
    import data_designer.config as dd
    import yaml

    path = exported_config(tmp_path)
    saved = yaml.safe_load(path.read_text())["data_designer"]
    assert saved["columns"][1:] == [
        {
            "name": "code_validation",
            "drop": False,
            "column_type": "bashgym-code-validation",
            "skip": None,
            "propagate_skip": True,
            "target_column": "code",
            "language": "python",
        },
        {
            "name": "sh_validation",
            "drop": False,
            "column_type": "bashgym-code-validation",
            "skip": None,
            "propagate_skip": True,
            "target_column": "sh",
            "language": "bash",  # stored normalized
        },
    ]
    assert saved["processors"][0]["processor_type"] == "bashgym-filter"
    loaded = dd.DataDesignerConfigBuilder.from_config(path)
    column = loaded.get_column_config("code_validation")
    assert isinstance(column, CodeValidationColumnConfig)
    assert column.required_columns == ["code"]
    result = generate(loaded, num_records=5, run_dir=tmp_path, settings=settings)
    check_exported_run(result.dataset.to_dict(orient="records"), result.artifact_dir)


def test_data_designer_cli_runs_the_exported_config(tmp_path, settings):
    import pyarrow.parquet as pq
    from data_designer.config.utils.io_helpers import save_config_file

    path = exported_config(tmp_path)
    home = tmp_path / "dd-home"  # the CLI reads its providers here; no column calls a model
    home.mkdir()
    save_config_file(home / "model_providers.yaml", {"providers": [PLACEHOLDER_PROVIDER]})
    env = {**os.environ, "DATA_DESIGNER_HOME": str(home), "NEMO_TELEMETRY_ENABLED": "false"}
    exe = Path(sys.executable).with_name("data-designer")
    out = tmp_path / "out"
    command = [str(exe), "create", str(path), "-n", "5", "--artifact-path", str(out)]
    command += ["--dataset-name", "ds", "--no-tui"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [batch] = sorted((out / "ds" / "parquet-files").glob("*.parquet"))
    check_exported_run(pq.read_table(batch).to_pylist(), out / "ds")


def test_rows_dropped_upstream_do_not_cost_the_row_group(scripted_models):
    # DataDesigner's own ValidationColumnConfig loses the whole row group here: one LLM code
    # cell fails to parse (its row is dropped), and its validator then returns one row too many.
    import data_designer.config as dd

    server = scripted_models.server
    server.add_rule(r"solution: something broken", "```python\ndef f(:\n    pass\n```")
    server.add_rule(r"query: unparsable", "no code here")
    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder([model_config(run.models.resolve("default"))])
        tasks = ["add numbers", "something broken", "sort a list", "unparsable"]
        builder.with_seed_dataset(seed_frame(pd.DataFrame({"task": tasks})))
        for name, lang in (("solution", dd.CodeLang.PYTHON), ("query", dd.CodeLang.SQL_ANSI)):
            builder.add_column(
                dd.LLMCodeColumnConfig(
                    name=name,
                    prompt=f"{name}: {{{{ task }}}}",
                    model_alias="default",
                    code_lang=lang,
                )
            )
        CodeJudge().configure(
            builder, CodeOptions(targets={"solution": "python", "query": "sql"}), run
        )
        result = generate(
            builder,
            num_records=4,
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    assert sorted(result.dataset["task"]) == ["add numbers", "sort a list"]
    assert result.dataset["query"].tolist() == ["SELECT 1;", "SELECT 1;"]
    [drop] = read_drops(result.artifact_dir)
    assert drop.reason == "code: python in solution fails ruff"
    assert drop.row["task"] == "something broken"
    assert drop.row["solution_validation"]["python_linter_severity"] == "fatal"
