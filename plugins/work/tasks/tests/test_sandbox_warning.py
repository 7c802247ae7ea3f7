"""An agent run whose commands cannot be sandboxed says so, loudly, at the start of every run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from bashgym_environments_bubblewrap.sandbox import why_not
from bashgym_testing import ScriptedExecutor

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap to hide it")


@pytest.fixture(autouse=True)
def fresh_probe():
    """bubblewrap probes bwrap once per process: each test here changes what it would find."""
    why_not.cache_clear()
    yield
    why_not.cache_clear()


def path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every program of this one but bwrap (as on a machine that lacks it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else []:
            target = bin_dir / program.name
            if program.name != "bwrap" and not target.exists():
                target.symlink_to(program)
    return str(bin_dir)


def run(bashgym_cli, register_plugin, tmp_path: Path, *extra: str):
    executor = ScriptedExecutor()
    executor.enqueue("done")
    register_plugin(executor.plugin("scripted"), "scripted-plugin")
    (tmp_path / "tasks.txt").write_text("do it\n")
    out = tmp_path / "out"
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", f"source.path={tmp_path / 'tasks.txt'}",
        "-x", "scripted", "-k", "parquet", "--out", str(out), *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    notes = json.loads((out / "run.json").read_text())["notes"]
    return result.output, [n for n in notes if n.startswith("warning:")]


def test_no_bwrap_warns_on_the_terminal_and_in_run_json(
    bashgym_cli, register_plugin, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", path_without_bwrap(tmp_path))
    output, warnings = run(bashgym_cli, register_plugin, tmp_path)
    assert len(warnings) == 1 and "NOT sandboxed" in warnings[0], warnings
    assert "bwrap is not installed" in warnings[0] and "apt-get install bubblewrap" in warnings[0]
    assert "WARNING" in output and "NOT sandboxed" in output


def test_local_chosen_where_bubblewrap_works_is_not_warned(bashgym_cli, register_plugin, tmp_path):
    _, warnings = run(bashgym_cli, register_plugin, tmp_path, "-e", "local")
    assert warnings == []
