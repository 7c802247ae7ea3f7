"""A run directory whose name has square brackets (`runs/[tasks]`) is printed as it is: rich
took `[tasks]` for a markup tag and dropped it, so the `done` line and the written paths named
a folder that does not exist."""

from __future__ import annotations

from pathlib import Path


def test_a_bracketed_run_directory_is_printed_whole(bashgym_cli, tmp_path: Path):
    rows = tmp_path / "rows.csv"
    rows.write_text("task\nfirst\nsecond\n")
    out = tmp_path / "[tasks]" / "[red]run"
    result = bashgym_cli.subprocess(
        "run", "-s", "files", "--set", f"source.path={rows}", "-k", "parquet", "--out", out,
        env={"COLUMNS": "80"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"done {out}: 2 generated") for line in lines), result.stdout
    written = [line.split(": ", 1)[1] for line in lines if line.startswith("  parquet: ")]
    assert written and all(Path(p).is_file() and p.startswith(str(out)) for p in written), lines
