"""A `claude_path` that names no executable is a mistake in the command (exit 2, before any
task runs), not a run whose every task failed (exit 3)."""

from __future__ import annotations

import pytest
from bashgym_executors_claude.options import ClaudeOptions
from pydantic import ValidationError


@pytest.fixture
def places(tmp_path):
    script = tmp_path / "claude"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("not executable\n")
    return {"executable": script, "plain": plain, "folder": tmp_path, "missing": tmp_path / "no"}


@pytest.mark.parametrize("which", ["plain", "folder", "missing"])
def test_a_path_that_is_not_an_executable_is_refused(places, which):
    with pytest.raises(ValidationError, match="is not an executable file"):
        ClaudeOptions(claude_path=str(places[which]))


def test_an_executable_a_name_on_path_and_none_are_accepted(places):
    assert ClaudeOptions(claude_path=str(places["executable"])).claude_path == str(
        places["executable"]
    )
    assert ClaudeOptions(claude_path="sh").claude_path == "sh"
    assert ClaudeOptions().claude_path is None


@pytest.mark.parametrize("executor", ["claude-cli", "agent-sdk"])
def test_the_run_stops_before_any_task(bashgym_cli, places, executor):
    (bashgym_cli.env.workdir / "tasks.txt").write_text("say hi\n")
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", "source.path=tasks.txt", "-x", executor, "-e", "local",
        "-k", "nemo-jsonl", "-o", out, "--set", f"executor.claude_path={places['missing']}",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1
    assert f"executor {executor!r}: claude_path" in result.stderr
    assert str(places["missing"]) in result.stderr
    assert not (out / "run.json").exists()  # nothing ran
