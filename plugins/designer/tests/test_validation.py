"""Code validation columns and the `code` judge, through real DataDesigner runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pandas as pd
import pytest
from bashgym_judges_code import (
    CodeJudge,
    CodeOptions,
    CodeValidationColumnConfig,
    add_validation,
    normalize_language,
    strip_fence,
    valid_rule,
)
from bashgym_judges_code.shell import check_shell
from bashgym_judges_code.validators import tool_name
from bashgym_runners_datadesigner import (
    PLACEHOLDER_PROVIDER,
    generate,
    prepare_environment,
    read_drops,
    seed_frame,
)
from pydantic import ValidationError

from bashgym.contracts import InputError, RunContext
from bashgym.settings import Settings

GOOD_PY = "def f(x):\n    return x + 1\n"
BAD_PY = "def f(:\n    pass\n"


@pytest.fixture
def settings(tmp_path):
    settings = Settings(cache_dir=tmp_path / "cache")
    prepare_environment(settings)
    return settings


def seeded(rows: dict[str, list]):
    import data_designer.config as dd

    builder = dd.DataDesignerConfigBuilder()
    builder.with_seed_dataset(seed_frame(pd.DataFrame(rows)))
    return builder


def test_languages_and_fences():
    assert normalize_language("Python") == "python"
    assert normalize_language("sql") == "sql:ansi"
    assert normalize_language("sql:postgres") == "sql:postgres"
    assert [normalize_language(s) for s in ("bash", "shell", "sh")] == ["bash", "bash", "sh"]
    with pytest.raises(InputError, match="sql:postgres"):
        normalize_language("sql:oracle")
    with pytest.raises(InputError, match="cannot validate language 'cobol'"):
        normalize_language("cobol")
    assert strip_fence("```python\nprint(1)\n```") == "print(1)"
    assert strip_fence("  ```\nls\n```  \n") == "ls"
    assert strip_fence("````md\n```py\nx\n```\n````") == "```py\nx\n```"  # only the outer one
    assert strip_fence("text\n```py\nx\n```") == "text\n```py\nx\n```"  # not surrounding
    two = "```py\na\n```\n\n```py\nb\n```"
    assert strip_fence(two) == two  # two blocks, not one surrounding fence
    assert strip_fence(None) == "" and strip_fence(float("nan")) == ""


def test_valid_rule():
    rule = valid_rule("solution_code_validation", "solution_code", "python")
    assert rule.keep == "{{ solution_code_validation.is_valid }}"
    assert rule.reason == "code: python in solution_code fails ruff"
    assert "sqlfluff (postgres)" in valid_rule("v", "q", "sql:postgres").reason


def test_options_are_checked():
    with pytest.raises(ValidationError, match="at least 1 item"):
        CodeOptions(targets={})
    with pytest.raises(ValidationError, match="cannot validate language"):
        CodeOptions(targets={"code": "brainfuck"})
    assert CodeOptions(targets={"code": "bash"}).drop_invalid is True


def test_shell_check_reports_syntax_errors():
    bad = check_shell("if then fi")
    assert bad["is_valid"] is False
    assert "syntax error" in bad["error_messages"] and "snippet.sh" not in bad["error_messages"]
    assert check_shell("for x in 1 2; do echo $x; done")["is_valid"] is True


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not on PATH")
def test_real_shellcheck_findings_are_reported():
    result = check_shell("echo $undefined_thing\n")
    assert result["is_valid"] is True  # bash parses it; shellcheck only warns
    assert any("SC" in finding for finding in result["shellcheck"]), result


FAKE_SHELLCHECK = """#!/bin/sh
# Answers like `shellcheck -f json` does: one error and one warning, whatever the input.
echo '[{"file":"x","line":2,"endLine":2,"column":1,"endColumn":2,"level":"error",'\
'"code":1072,"message":"Unexpected keyword","fix":null},'\
'{"file":"x","line":1,"endLine":1,"column":6,"endColumn":9,"level":"warning",'\
'"code":2154,"message":"var is referenced but not assigned.","fix":null}]'
exit 1
"""


def test_shellcheck_errors_make_a_snippet_invalid(tmp_path, monkeypatch):
    # A stand-in for the shellcheck binary (not installed here) printing its JSON format.
    fake = tmp_path / "bin" / "shellcheck"
    fake.parent.mkdir()
    fake.write_text(FAKE_SHELLCHECK)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    result = check_shell("echo $var\n", "sh")
    assert result["is_valid"] is False
    assert result["error_messages"] == "line 2: SC1072 (error) Unexpected keyword"
    assert result["shellcheck"][1] == "line 1: SC2154 (warning) var is referenced but not assigned."


def test_each_language_gets_its_own_correct_results(tmp_path, settings):
    builder = seeded(
        {
            "py": [GOOD_PY, "```python\nprint('hi')\n```", BAD_PY, "", None],
            "query": ["SELECT a FROM t;", "SELEC a FRM t", "```sql\nSELECT 1;\n```", "", "SELECT"],
            "script": ["echo hi", "if then fi", "```bash\nls -la\n```", "", "echo 'open"],
        }
    )
    py = add_validation(builder, "py", "python")
    sql = add_validation(builder, "query", "sql", name="query_ok")
    sh = add_validation(builder, "script", "bash")
    assert (py, sql, sh) == ("py_validation", "query_ok", "script_validation")
    data = generate(builder, num_records=5, run_dir=tmp_path, settings=settings).dataset

    def valid(column):
        return [cell["is_valid"] for cell in data[column]]

    assert valid(py) == [True, True, False, True, True]
    assert valid(sql) == [True, False, True, True, False]
    assert valid(sh) == [True, False, True, True, False]
    assert data[py][2]["python_linter_severity"] == "fatal"
    assert "invalid-syntax" in data[py][2]["error_messages"]
    assert "PRS" in data[sql][1]["error_messages"]
    assert "unexpected token" in data[sh][1]["error_messages"]
    assert [cell["empty"] for cell in data[py]] == [False, False, False, True, True]
    assert {cell["language"] for cell in data[sql]} == {"sql:ansi"}


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


def test_results_stay_on_their_rows_after_an_upstream_drop(tmp_path, settings):
    # The expression drops row 1 (it renders empty); DataDesigner's ValidationColumnConfig would
    # then return 5 results for 4 rows and lose the whole row group.
    import data_designer.config as dd

    builder = seeded({"x": ["print(1)", "", "print(2)", "x = (", "print(3)"]})
    builder.add_column(dd.ExpressionColumnConfig(name="code", expr="{{ x }}"))
    add_validation(builder, "code", "python")
    data = generate(builder, num_records=5, run_dir=tmp_path, settings=settings).dataset
    assert data["code"].tolist() == ["print(1)", "print(2)", "x = (", "print(3)"]
    assert [c["is_valid"] for c in data["code_validation"]] == [True, True, False, True]


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


def test_datadesigner_discovers_the_plugin():
    import data_designer.config as dd
    from bashgym_judges_code.plugin import code_validation_plugin
    from data_designer.engine.testing.utils import assert_valid_plugin
    from data_designer.plugins.plugin import PluginType
    from data_designer.plugins.registry import PluginRegistry

    names = {ep.value for ep in entry_points(group="data_designer.plugins")}
    assert "bashgym_judges_code.plugin:code_validation_plugin" in names
    assert_valid_plugin(code_validation_plugin)
    assert code_validation_plugin.name == "bashgym-code-validation"
    registered = PluginRegistry().get_plugin_names(PluginType.COLUMN_GENERATOR)
    assert "bashgym-code-validation" in registered
    builder = dd.DataDesignerConfigBuilder()
    add_validation(builder, "code", "sql:postgres", name="ok")
    assert builder.get_column_config("ok").language == "sql:postgres"


def test_column_config_checks_its_language():
    config = CodeValidationColumnConfig(name="v", target_column="q", language=" SQL ")
    assert config.language == "sql:ansi" and config.column_type == "bashgym-code-validation"
    assert (config.required_columns, config.side_effect_columns) == (["q"], [])
    with pytest.raises(ValidationError, match="cannot validate language 'cobol'"):
        CodeValidationColumnConfig(name="v", target_column="q", language="cobol")
    with pytest.raises(ValidationError, match="target_column"):
        CodeValidationColumnConfig(name="v", target_column="", language="python")


def test_rows_dropped_upstream_do_not_cost_the_row_group(scripted_models):
    # DataDesigner's own ValidationColumnConfig loses the whole row group here: one LLM code
    # cell fails to parse (its row is dropped), and its validator then returns one row too many.
    import data_designer.config as dd

    server = scripted_models.server
    server.add_rule(r"solution: something broken", "```python\ndef f(:\n    pass\n```")
    server.add_rule(r"query: unparsable", "no code here")
    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder([run.models.model_config("default")])
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
            providers=run.models.providers_for(builder.model_configs),
        )
    assert sorted(result.dataset["task"]) == ["add numbers", "sort a list"]
    assert result.dataset["query"].tolist() == ["SELECT 1;", "SELECT 1;"]
    [drop] = read_drops(result.artifact_dir)
    assert drop.reason == "code: python in solution fails ruff"
    assert drop.row["task"] == "something broken"
    assert drop.row["solution_validation"]["python_linter_severity"] == "fatal"
