"""`bashgym train` as a new user meets it: its errors in plain words, and `--options` listed the
way `bashgym options` lists a plugin's (real CLI, real trainer plugins, real run folders)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

WIDE = {"COLUMNS": "400"}  # a wide terminal: each option's row on one line, read as one string


def test_a_run_without_train_jsonl_is_one_line_without_a_class_name(bashgym_cli, tmp_path: Path):
    """Before: `error: InputError: RUN: the run wrote no train.jsonl ...`."""
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"status": "ok", "outputs": {}}))

    result = bashgym_cli("train", str(run_dir))

    assert result.exit_code == 2, result.output
    line = " ".join(result.stderr.split())
    assert line.startswith(f"error: {run_dir}: the run wrote no train.jsonl"), line
    assert "InputError" not in result.output


@pytest.mark.parametrize("trainer", ["trl", "nemo-customizer"])
def test_options_show_schema_types_allowed_values_and_a_meaning_for_each(bashgym_cli, trainer: str):
    """Before: Python types (`Literal`, `list`, `str | None`), a Literal's values missing, and
    no description for learning_rate, dropout, seed, finetuning_type, training_type, ..."""
    result = bashgym_cli.subprocess("train", "--trainer", trainer, "--options", env=WIDE)

    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert f"trainer {trainer} (from plugin {trainer})" in text
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^│ trainer\.(\w+)\s+│(.*)│\s*$", text, re.MULTILINE)
    }
    assert rows, text
    for key, row in rows.items():
        type_, _default, description = (cell.strip() for cell in row.split("│"))
        assert description, f"trainer.{key} has no description"
        assert "Literal" not in type_ and "None" not in type_, (key, type_)
        assert type_ != "list", key
    type_of = {k: r.split("│")[0].strip() for k, r in rows.items()}
    if trainer == "trl":
        assert type_of["loss"] == '"completion" | "all"'
        assert type_of["base"] == "str | null"
        assert type_of["target_modules"] == "list[str]"
        assert '["q_proj", "k_proj"' in rows["target_modules"]  # a default_factory's value
    else:
        assert type_of["finetuning_type"] == '"lora" | "all_weights"'
        assert type_of["training_type"] == '"sft"'
        assert rows["url"].split("│")[1].strip() == "required"


def test_options_match_bashgym_options_for_the_same_model(bashgym_cli):
    """The type column is the one `bashgym options` prints for a plugin's option of the same
    annotation: a sink's `str | None` reads `str | null` in both."""
    train = bashgym_cli.subprocess("train", "--options", env=WIDE).stdout
    sink = bashgym_cli.subprocess("options", "sink", "parquet", env=WIDE).stdout
    assert re.search(r"│ sink\.path\s+│ str \| null\s+│", sink), sink
    assert re.search(r"│ trainer\.base\s+│ str \| null\s+│", train), train


@pytest.mark.parametrize("trainer", ["trl", "nemo-customizer"])
def test_options_are_the_listing_of_bashgym_options_trainer(bashgym_cli, trainer: str):
    """One listing, not two that drift: `train --options` prints what `bashgym options trainer
    NAME` prints, byte for byte."""
    train = bashgym_cli.subprocess("train", "--trainer", trainer, "--options", env=WIDE)
    options = bashgym_cli.subprocess("options", "trainer", trainer, env=WIDE)

    assert train.exit_code == options.exit_code == 0, train.stderr + options.stderr
    assert train.stdout == options.stdout


@pytest.mark.parametrize(
    ("trainer", "typo", "meant"),
    [("trl", "max_step", "max_steps"), ("nemo-customizer", "learning_rat", "learning_rate")],
)
def test_an_unknown_set_option_names_the_one_meant_and_every_valid_one(
    bashgym_cli, tmp_path: Path, trainer: str, typo: str, meant: str
):
    """Before: `error: set trainer.max_step: Extra inputs are not permitted` (pydantic's words,
    no valid name, and the `--` of `--set` lost). Now worded as `run` words a step's option."""
    from bashgym.plugins import current_host

    valid = list(current_host().registry.get("trainers", trainer).obj.Options.model_fields)
    result = bashgym_cli("train", str(tmp_path), "-t", trainer, "--set", f"trainer.{typo}=1")

    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert f"{typo}: unknown option (did you mean {meant!r}?)" in line, line
    assert line.startswith(f"error: trainer {trainer!r}: "), line
    assert line.endswith(f". Valid options: {', '.join(valid)}"), line  # whole, never cut
    assert "Extra inputs" not in line and "Traceback" not in result.output


def test_a_set_item_without_trainer_key_keeps_its_dashes(bashgym_cli, tmp_path: Path):
    result = bashgym_cli("train", str(tmp_path), "--set", "max_steps")

    assert result.exit_code == 2, result.output
    assert "--set 'max_steps': expected trainer.KEY=VALUE" in result.stderr, result.stderr


def transcripts_run(bashgym_cli, repo, out: Path, *sets: str) -> Path:
    """A real nemo-jsonl run of the shipped transcripts (with `sets`), as `train` gets one."""
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", f"source.path={repo / 'examples' / 'transcripts'}",
        *sets, "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code in (0, 3), result.output
    return out


def test_a_run_that_kept_no_rows_is_said_to_have_kept_none(bashgym_cli, repo, tmp_path: Path):
    """It was run with --sink nemo-jsonl: telling the user to do that would send them in a
    circle; the run kept no row, and that is what it says."""
    run = transcripts_run(bashgym_cli, repo, tmp_path / "r", "--set", "source.since=2030-01-01")
    result = bashgym_cli("train", str(run))
    assert result.exit_code == 2, result.output
    line = " ".join(result.stderr.split())
    assert line.startswith(f"error: {run}: the run kept no rows for training"), line
    assert "run it with --sink nemo-jsonl" not in line
    assert not (run / "train-trl").exists()


def test_a_trainer_that_cannot_start_leaves_no_empty_out_folder(bashgym_cli, repo, tmp_path):
    """nemo-customizer with its service down: one line, exit 1, and no empty --out left."""
    run = transcripts_run(bashgym_cli, repo, tmp_path / "r")
    out = tmp_path / "trained"
    result = bashgym_cli(
        "train", str(run), "-t", "nemo-customizer", "--set", "trainer.url=http://127.0.0.1:9",
        "--set", "trainer.config=meta/llama-3.2-1b-instruct@v1.0.0+A100", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not out.exists()
