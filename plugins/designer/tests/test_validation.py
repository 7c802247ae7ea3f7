"""Code validation columns (the `bashgym-code-validation` plugin) in real DataDesigner runs."""

from __future__ import annotations

import os
import shutil
from importlib.metadata import entry_points

import pytest
from bashgym_designer.designer import generate
from bashgym_designer.testing import ready_settings, seeded
from bashgym_designer.validation import (
    CodeValidationColumnConfig,
    add_validation,
    normalize_language,
    strip_fence,
    valid_rule,
)
from bashgym_designer.validation.shell import check_shell
from pydantic import ValidationError

from bashgym.contracts import InputError

GOOD_PY = "def f(x):\n    return x + 1\n"
BAD_PY = "def f(:\n    pass\n"


@pytest.fixture
def settings(tmp_path):
    return ready_settings(tmp_path)


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


def test_datadesigner_discovers_the_plugin():
    import data_designer.config as dd
    from bashgym_designer.validation.plugin import code_validation_plugin
    from data_designer.engine.testing.utils import assert_valid_plugin
    from data_designer.plugins.plugin import PluginType
    from data_designer.plugins.registry import PluginRegistry

    names = {ep.value for ep in entry_points(group="data_designer.plugins")}
    assert "bashgym_designer.validation.plugin:code_validation_plugin" in names
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
