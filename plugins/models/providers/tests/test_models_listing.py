"""`bashgym models` piped at 80 columns (QA finding 8): no provider name cut, no URL split,
and an alias that lacks a setting says which one instead of `started by runtime None`.

The real `bashgym` executable with stdout on a pipe and COLUMNS set: what `bashgym models | cat`
gets (80 columns) and what a wide terminal gets.
"""

from __future__ import annotations

import json
from pathlib import Path

URL = "http://127.0.0.1:18555/v1/a-path-long-enough-to-fold"
LONG_MODEL = "meta-llama/llama-3.3-70b-instruct"


def write_config(workdir: Path, text: str) -> None:
    """The project's bashgym.toml (read from the current folder, the run's workdir)."""
    (workdir / "bashgym.toml").write_text(text)


def test_piped_at_80_columns_every_name_and_url_is_whole_on_one_line(bashgym_cli, bashgym_env):
    write_config(
        bashgym_env.workdir,
        f'[models.default]\nprovider = "openai-compatible"\nmodel = "scripted"\n'
        f'endpoint = "{URL}"\n[models.teacher]\nprovider = "openrouter"\nmodel = "{LONG_MODEL}"\n',
    )
    result = bashgym_cli.subprocess("models", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert not any("…" in line for line in lines), result.stdout
    for whole in ("openai-compatible", URL, LONG_MODEL, "https://openrouter.ai/api/v1",
                  "OPENROUTER_API_KEY"):  # fmt: skip
        assert any(whole in line for line in lines), f"{whole} split or cut:\n{result.stdout}"
    assert all(line == line.rstrip() for line in lines), result.stdout


def test_a_wide_terminal_still_gets_the_table(bashgym_cli, bashgym_env):
    write_config(
        bashgym_env.workdir,
        f'[models.default]\nprovider = "openai-compatible"\nmodel = "scripted"\n'
        f'endpoint = "{URL}"\n',
    )
    result = bashgym_cli.subprocess("models", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "│ default" in line)
    assert "openai-compatible" in row and URL in row and "scripted" in row


def test_an_alias_without_an_endpoint_says_which_setting_is_missing(bashgym_cli, bashgym_env):
    write_config(
        bashgym_env.workdir, '[models.judge]\nprovider = "openai-compatible"\nmodel = "x"\n'
    )
    for columns in ("80", "200"):  # blocks and table
        result = bashgym_cli.subprocess("models", env={"COLUMNS": columns})
        assert result.exit_code == 0, result.output
        (judge,) = [line for line in result.stdout.splitlines() if "judge" in line]
        assert "None" not in result.stdout and "runtime" not in judge, result.stdout
        assert "default" in result.stdout  # listed: what every alias not configured uses
        assert "missing: set models.judge.endpoint" in result.stdout, result.stdout
    listed = bashgym_cli.subprocess("models", "--json")
    (judge,) = [row for row in json.loads(listed.stdout) if row["alias"] == "judge"]
    assert judge["endpoint"] is None and judge["missing"] == ["models.judge.endpoint"]
