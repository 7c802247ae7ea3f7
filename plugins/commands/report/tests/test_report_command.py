"""`bashgym report RUN_DIR` given a path that is not a run: it says which mistake it is, in one
line, exit 2 (real CLI, real folders)."""

from __future__ import annotations

from pathlib import Path


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_path_that_does_not_exist_is_said_not_to_exist(bashgym_cli, tmp_path: Path) -> None:
    """Before: `... is not a run directory (no run.json)`, as if the folder were there."""
    missing = tmp_path / "runs" / "typo"

    result = bashgym_cli("report", str(missing))

    assert result.exit_code == 2
    assert one_line(result.stderr) == f"error: {missing} does not exist (give a run's --out folder)"


def test_a_file_is_not_a_run_directory(bashgym_cli, tmp_path: Path) -> None:
    file = tmp_path / "run.json"
    file.write_text("{}")

    result = bashgym_cli("report", str(file))

    assert result.exit_code == 2
    assert f"{file} is a file, not a run directory" in one_line(result.stderr)


def test_a_folder_without_run_json_is_not_a_run_directory(bashgym_cli, tmp_path: Path) -> None:
    result = bashgym_cli("report", str(tmp_path))

    assert result.exit_code == 2
    assert one_line(result.stderr) == f"error: {tmp_path} is not a run directory (no run.json)"
