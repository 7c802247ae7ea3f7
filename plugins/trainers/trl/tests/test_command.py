"""`bashgym train`: the trainer is found by name, its options checked before any work."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_unknown_trainer_and_bad_option_are_one_line_errors(
    bashgym_cli, tmp_path: Path, make_run
) -> None:
    run = make_run(tmp_path / "run")
    bad = bashgym_cli("train", run, "--trainer", "trll")
    assert bad.exit_code == 2 and "trl" in bad.stderr
    bad = bashgym_cli("train", run, "--set", "trainer.rank=0")
    assert bad.exit_code == 2 and "trainer 'trl': rank:" in " ".join(bad.stderr.split())
    bad = bashgym_cli("train", run, "--set", "trainer.nope=1")
    assert bad.exit_code == 2 and "nope: unknown option" in " ".join(bad.stderr.split())
    bad = bashgym_cli("train", run, "--set", "rank=4")
    assert bad.exit_code == 2 and "trainer.KEY=VALUE" in bad.stderr


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed: the extra's absence cannot be shown")
def test_without_the_extra_the_error_names_it(bashgym_cli, tmp_path: Path, make_run) -> None:
    result = bashgym_cli("train", make_run(tmp_path / "run"))
    assert result.exit_code == 2
    assert "bashgym-trainers-trl[train]" in result.stderr


def test_options_are_listed_and_run_dir_is_required(bashgym_cli) -> None:
    listed = bashgym_cli("train", "--trainer", "trl", "--options")
    assert listed.exit_code == 0 and "trainer.max_steps" in listed.stdout
    customizer = bashgym_cli("train", "--trainer", "nemo-customizer", "--options").stdout
    assert re.search(r"trainer\.url\b.*?required", customizer, re.DOTALL), customizer
    missing = bashgym_cli("train")
    assert missing.exit_code == 2 and "RUN_DIR is missing" in missing.stderr
