"""`bashgym report RUN_DIR` given a path that is not a run: it says which mistake it is, in one
line, exit 2 (real CLI, real folders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


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


def a_run_dir(tmp_path: Path, **summary: object) -> Path:
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"status": "ok", **summary}))
    return run_dir


def test_a_report_that_cannot_be_put_in_place_is_said_in_words(bashgym_cli, tmp_path: Path):
    """Before: `cannot write the report: IsADirectoryError: [Errno 21] Is a directory: ...`.
    A folder where report.html goes stops root too (chmod would not)."""
    run_dir = a_run_dir(tmp_path)
    (run_dir / "report.html").mkdir()

    result = bashgym_cli("report", str(run_dir))

    assert result.exit_code == 2, result.output
    assert one_line(result.stderr) == (
        f"error: {run_dir}: cannot write the report: '{run_dir / 'report.html'}': it is a folder"
    )
    assert not (run_dir / "report.html.tmp").exists()  # no half page left behind


def test_a_row_file_that_is_not_parquet_is_said_without_a_class_name(bashgym_cli, tmp_path):
    """Before: `cannot write the report: ArrowInvalid: Parquet magic bytes not found ...`."""
    rows = tmp_path / "r1" / "parquet" / "train.parquet"
    run_dir = a_run_dir(tmp_path, outputs={"parquet": [str(rows)]})
    rows.parent.mkdir()
    rows.write_text("not parquet")

    result = bashgym_cli("report", str(run_dir))

    assert result.exit_code == 2, result.output
    line = one_line(result.stderr)
    assert line.startswith(
        f"error: {run_dir}: cannot write the report: a file of the run is not what a run writes ("
    ), line
    assert "Parquet magic bytes not found" in line and "Arrow" not in line, line


def test_a_path_through_a_file_is_worded_with_the_file_it_names(tmp_path: Path):
    """A real OSError of each common kind, worded: the path the OS named and the reason."""
    from bashgym_cli.oserrors import os_problem

    (tmp_path / "file").write_text("")
    with pytest.raises(OSError) as through_a_file:
        (tmp_path / "file" / "report.html").write_text("")
    with pytest.raises(OSError) as missing:
        (tmp_path / "nope" / "report.html").write_text("")

    assert os_problem(through_a_file.value, with_path=True) == (
        f"'{tmp_path / 'file' / 'report.html'}': a part of its path is a file, not a folder"
    )
    assert os_problem(missing.value, with_path=True) == (
        f"'{tmp_path / 'nope' / 'report.html'}': it or its folder does not exist"
    )


def test_a_run_whose_report_cannot_be_written_notes_it_in_words(bashgym_cli, repo, monkeypatch):
    """The run's own report at its end: the rows are written, and the note says why the page is
    not, in words (before: `report.html not written: IsADirectoryError: [Errno 21] ...`)."""
    monkeypatch.chdir(repo)
    monkeypatch.setenv("COLUMNS", "400")  # the note on one line, read whole
    out = bashgym_cli.env.root / "run"
    (out / "report.html").mkdir(parents=True)

    result = bashgym_cli("run", "examples/slice.toml", "--out", str(out))

    assert result.exit_code == 0, result.output
    note = f"note: report.html not written: '{out / 'report.html'}': it is a folder"
    assert note in result.output.splitlines(), result.output
    assert "Errno" not in result.output and "IsADirectoryError" not in result.output
