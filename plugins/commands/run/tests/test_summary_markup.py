"""A run directory whose name has square brackets (`runs/[tasks]`) is printed as it is: rich
took `[tasks]` for a markup tag and dropped it, so the `done` line and the written paths named
a folder that does not exist."""

from __future__ import annotations

import json
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


def test_sinks_that_keep_different_counts_each_say_theirs_in_words(bashgym_cli, tmp_path: Path):
    """Two sinks that disagree (nemo-jsonl refuses the trace that did not succeed, parquet
    keeps all six): each count is named by its sink in the `done` line, true to run.json
    (was `6 generated, (5 nemo-jsonl, 6 parquet) kept`)."""
    transcripts = Path(__file__).parents[4] / "examples" / "transcripts"
    out = tmp_path / "run"
    result = bashgym_cli.subprocess(
        "run", "-s", "claude-code", "--set", f"source.path={transcripts}",
        "-k", "nemo-jsonl", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["kept_by_sink"] == {"nemo-jsonl": 5, "parquet": 6}, counts
    done = next(line for line in result.stdout.splitlines() if line.startswith("done "))
    assert done.startswith(f"done {out}: 6 generated, 5 kept in nemo-jsonl and 6 in parquet, "
                           "dropped: 1 sink nemo-jsonl: "), done  # fmt: skip
