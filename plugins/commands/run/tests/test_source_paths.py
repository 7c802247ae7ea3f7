"""A source path that is not there is exit 2 before any run folder exists (tester's finding:
`-s claude-code --set source.path=/nonexistent` left run.json, report.html, events.jsonl,
run.lock, run.toml and an empty sink folder, and every typo without --out one more folder under
runs/). Each source that reads a local path checks it with its options, which the kernel's
resolve() validates before a folder is made. The runs here are the real CLI."""

from __future__ import annotations

import pytest

MISSING = [
    ("claude-code", "/nonexistent", "does not exist"),
    ("codex", "/nonexistent", "does not exist"),
    ("files", "/nonexistent.csv", "does not exist"),
    ("files", "data/*.csv", "nothing matches this glob"),
    ("prompts", "missing.txt", "does not exist"),
    ("documents", "docs/**/*.md", "nothing matches this glob"),
    ("atif", "jobs", "does not exist"),
    ("huggingface", "./local-dataset", "does not exist, and is not a Hub id like 'openai/gsm8k'"),
    ("code-repo", "~/no-such-repository", "does not exist"),
]


def one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(("source", "path", "says"), MISSING)
def test_a_missing_source_path_is_exit_2_and_leaves_no_run_folder(bashgym_cli, source, path, says):
    work = bashgym_cli.env.workdir
    result = bashgym_cli("run", "-s", source, "--set", f"source.path={path}", "-k", "nemo-jsonl",
                         "--out", "out")  # fmt: skip
    assert result.exit_code == 2, result.output
    line = one_error(result.stderr)
    assert line.startswith(f"error: source {source!r}: path: {says} (got {path!r})"), line
    assert not (work / "out").exists()

    again = bashgym_cli("run", "-s", source, "--set", f"source.path={path}", "-k", "nemo-jsonl")
    assert again.exit_code == 2, again.output
    assert not (work / "runs").exists() and sorted(p.name for p in work.iterdir()) == []


def test_the_same_path_from_a_run_file(bashgym_cli):
    work = bashgym_cli.env.workdir
    (work / "run.toml").write_text("[source]\nplugin = 'files'\npath = 'rows.csv'\n"
                                   "[sink]\nplugin = 'parquet'\n")  # fmt: skip
    result = bashgym_cli("run", "run.toml", "--out", "out")
    assert result.exit_code == 2, result.output
    assert "source 'files': path: does not exist (got 'rows.csv')" in one_error(result.stderr)
    assert not (work / "out").exists()
    (work / "rows.csv").write_text("task\nfirst\n")  # once it is there, the same run runs
    ran = bashgym_cli("run", "run.toml", "--out", "out")
    assert ran.exit_code == 0, ran.output
    assert (work / "out" / "run.json").is_file()
