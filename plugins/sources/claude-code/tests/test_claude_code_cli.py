"""End to end: `bashgym run --source claude-code ... --sink parquet` writes Trace rows."""

from __future__ import annotations

import json
import shutil

import pandas as pd

from bashgym.records import trace_from_row


def test_cli_run_writes_trace_rows(bashgym_cli, bashgym_env, fixtures):
    projects = bashgym_env.root / "transcripts"
    shutil.copytree(fixtures / "projects", projects)
    broken = projects / "-home-dev-todo-api" / "4f7c2a10-8d3e-4b6a-9c1f-2e5d7a9b0c11.jsonl"
    broken.write_bytes(broken.read_bytes() + b'{"type":"assistant","message":{"id":"m')
    result = bashgym_cli(
        "run",
        "--source",
        "claude-code",
        "--set",
        f"source.path={projects}",
        "--set",
        "source.project=todo-api",
        "--sink",
        "parquet",
        "--out",
        str(bashgym_env.root / "out"),
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(bashgym_env.root / "out" / "data.parquet")
    assert len(frame) == 3
    traces = {t.id: t for t in (trace_from_row(row) for row in frame.to_dict(orient="records"))}
    parent = traces["c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f"]
    assert parent.subagents[0].provenance.extra["agent_type"] == "Explore"
    assert set(frame["source"]) == {"claude-code"}
    assert set(frame["project"]) == {"/home/dev/todo-api"}
    assert frame.set_index("trace_id").loc[parent.id, "num_subagents"] == 1
    assert frame["cost_usd"].notna().all()
    summary = json.loads((bashgym_env.root / "out" / "run.json").read_text())
    assert summary["counts"]["source.bad_lines"] == 1
    assert summary["counts"]["source.filtered.project"] == 3


def test_cli_bad_path_is_one_line_and_exit_2(bashgym_cli, bashgym_env):
    """Refused with the options, before a run folder exists: a typo left one under runs/ (a
    run.json saying failed, a report, an empty sink folder) each time."""
    result = bashgym_cli(
        "run", "--source", "claude-code", "--set", "source.path=/nope/none", "--sink", "parquet"
    )
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(
        "error: source 'claude-code': path: does not exist (got '/nope/none')"
    ), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (bashgym_env.workdir / "runs").exists()


def test_cli_a_date_it_cannot_read_says_the_formats_once(bashgym_cli, bashgym_env):
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.since=yesterday", "-k", "parquet"
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        "error: source 'claude-code': since: not a date or time: use YYYY-MM-DD or an ISO "
        "datetime, e.g. 2026-11-28T09:00 (got 'yesterday')"
    ), line
    assert "since.date" not in line and "since.datetime" not in line


def test_cli_csv_input_is_one_line_and_exit_2(bashgym_cli, bashgym_env):
    csv = bashgym_env.root / "data.csv"
    csv.write_text("prompt,response\n" + "".join(f"q{i},a{i}\n" for i in range(300)))
    result = bashgym_cli(
        "run", "--source", "claude-code", "--set", f"source.path={csv}", "--sink", "parquet"
    )
    assert result.exit_code == 2
    said = " ".join(result.output.split())  # the console wraps long lines
    assert "data.csv' is not a Claude Code transcript" in said
    assert said.count("data.csv") == 1  # one message, not one per CSV row
