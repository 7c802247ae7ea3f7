"""Agent runs: each source row a task in its own workspace, run by an executor in an
environment, N at a time; traces flow to the sinks; a killed run resumes with every prompt
exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from bashgym_testing import ScriptedExecutor

from bashgym.events import read_events
from bashgym.records import trace_from_row

PLUGIN = """
import asyncio, os
from bashgym import hookimpl
from bashgym_testing import ScriptedExecutor


class Slow(ScriptedExecutor):
    async def run(self, task, options, ctx):
        await asyncio.sleep(float(os.environ.get("TASK_DELAY", "0")))
        if "fail" in task.prompt:
            self.enqueue("gave up", status="failed", reason="tests fail")
        else:
            self.enqueue(f"did {task.prompt}", write={"out.txt": task.prompt})
        return await super().run(task, options, ctx)


@hookimpl
def register_executors(register):
    register("scripted", Slow())
"""


@pytest.fixture
def agent_run(tmp_path):
    plugin = tmp_path / "slow_executor.py"
    plugin.write_text(PLUGIN)

    def args(prompts: list[str], *extra: str) -> list[str]:
        tasks = tmp_path / "tasks.txt"
        tasks.write_text("\n".join(prompts) + "\n")
        return [
            "run", "--plugin", str(plugin), "-s", "prompts", "--set", f"source.path={tasks}",
            "-x", "scripted", "-e", "local", "-k", "parquet", *extra,
        ]  # fmt: skip

    return args


def test_each_prompt_is_a_task_whose_trace_reaches_the_sink(bashgym_cli, agent_run, tmp_path):
    out = tmp_path / "run"
    prompts = ["write a", "write b", "please fail"]
    result = bashgym_cli(*agent_run(prompts, "--out", str(out)))
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out / "data.parquet")
    assert sorted(rows["prompt"]) == sorted(prompts)
    by_prompt = {r["prompt"]: r for r in rows.to_dict(orient="records")}
    assert by_prompt["write a"]["status"] == "success"
    assert list(by_prompt["write a"]["workspace_files"]) == ["out.txt"]
    assert by_prompt["please fail"]["status"] == "failed"
    trace = trace_from_row(by_prompt["write a"])
    assert [m.content for m in trace.messages] == ["write a", "did write a"]
    # workspaces: removed on success, kept on failure for a look
    assert pd.isna(by_prompt["write a"]["workspace"])
    kept = Path(by_prompt["please fail"]["workspace"])
    assert (kept / "out.txt").is_file() is False and kept.is_dir()
    summary = json.loads((out / "run.json").read_text())
    assert summary["tasks"] == {"success": 2, "failed": 1, "running": 0}
    events = read_events(out / "events.jsonl")
    assert sum(e.type == "task_finished" for e in events) == 3


def test_workspaces_from_a_template_or_a_git_clone(bashgym_cli, agent_run, tmp_path):
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "app.py").write_text("print('hi')\n")
    out = tmp_path / "t"
    result = bashgym_cli(
        *agent_run(["one"], "--set", f"workspace.template={template}",
                   "--set", "workspace.keep=all", "--out", str(out)),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = pd.read_parquet(out / "data.parquet").to_dict(orient="records")
    assert (Path(row["workspace"]) / "src" / "app.py").is_file()

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("v1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    (repo / "README.md").write_text("v2\n")
    subprocess.run([*git, "commit", "-qam", "v2"], check=True)
    out = tmp_path / "g"
    result = bashgym_cli(
        *agent_run(["two"], "--set", f"workspace.repo={repo}", "--set", "workspace.ref=v1",
                   "--set", "workspace.keep=all", "--out", str(out)),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = pd.read_parquet(out / "data.parquet").to_dict(orient="records")
    assert (Path(row["workspace"]) / "README.md").read_text() == "v1\n"
    assert list(row["workspace_files"]) == ["out.txt"]  # git: what the task changed


def test_an_executor_needs_a_prompt_column(bashgym_cli, tmp_path, register_plugin):
    register_plugin(ScriptedExecutor().plugin(), "scripted-plugin")
    data = tmp_path / "d.csv"
    data.write_text("name\nx\n")
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={data}", "-x", "scripted", "-e", "local",
        "-k", "parquet", "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "an executor needs a prompt per row" in result.output


@pytest.mark.slow
def test_twenty_prompts_killed_midway_resume_with_each_exactly_once(
    bashgym_cli, agent_run, tmp_path
):
    out = tmp_path / "run"
    prompts = [f"task number {i}" for i in range(20)]
    args = agent_run(prompts, "--concurrency", "4", "--out", str(out))
    cmd = [str(Path(sys.executable).with_name("bashgym")), *args]
    env = {**os.environ, **bashgym_cli.env.env(), "TASK_DELAY": "0.3"}
    proc = subprocess.Popen(cmd, cwd=bashgym_cli.env.workdir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    events = out / "events.jsonl"
    deadline = time.monotonic() + 120
    while sum('"task_finished"' in line for line in _lines(events)) < 6:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((out / "run.json").read_text())["status"] == "running"
    finished_before = sum('"task_finished"' in line for line in _lines(events))
    assert finished_before < 20

    result = bashgym_cli.subprocess(*args, env={"TASK_DELAY": "0"})
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out / "data.parquet")
    assert sorted(rows["prompt"]) == sorted(prompts)  # none lost, none twice
    summary = json.loads((out / "run.json").read_text())
    assert summary["attempt"] == 2 and summary["counts"]["kept"] == 20
    # the second attempt ran only what the first did not finish (kill -9: up to 4 under way)
    lines = _lines(events)
    second = lines[max(i for i, line in enumerate(lines) if '"run_started"' in line) :]
    assert sum('"task_started"' in line for line in second) <= 20 - finished_before + 4
    assert summary["tasks"] == {"success": 20, "running": 0}  # both attempts', each task once


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def test_an_executor_that_needs_the_network_refuses_an_environment_without(
    bashgym_cli, tmp_path, register_plugin
):
    class Online(ScriptedExecutor):
        needs_network = True

    register_plugin(Online().plugin("online"), "online-plugin")
    tasks = tmp_path / "t.txt"
    tasks.write_text("hi\n")
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", f"source.path={tasks}", "-x", "online", "-e", "local",
        "--set", "environment.network=false", "-k", "parquet", "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "add --set environment.network=true" in result.output
