"""Crash and resume, money and bad input: a real `bashgym run` killed with SIGKILL at the exact
moment that once lost work, then run again; two processes on one run dir; the run's budget.

The executor below appends each task's prompt to a counter file when it starts, so a test
counts how often every task ran. A task may wait on a gate file (the test decides when it
ends), and an `on_event` hook can SIGKILL the run right after its Nth `task_finished` event is
logged: the moment where a finished task used to be run (and paid for) again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from bashgym.events import read_events

PLUGIN = """
import asyncio, json, os, signal
from pathlib import Path

from bashgym import hookimpl
from bashgym.records import Usage
from bashgym_testing import ScriptedExecutor


class Counting(ScriptedExecutor):
    async def run(self, task, options, ctx):
        with open(os.environ["COUNTER"], "a") as fh:
            fh.write(json.dumps([task.prompt, ctx.budget.left_usd]) + "\\n")
        gate = os.environ.get("GATE")
        while gate and not Path(gate).exists():
            await asyncio.sleep(0.02)
        await asyncio.sleep(float(os.environ.get("TASK_DELAY", "0")))
        cost = float(os.environ.get("COST", "0.25"))
        self.enqueue(f"did {task.prompt}", usage=Usage(input_tokens=10, output_tokens=5),
                     cost_usd=cost)
        return await super().run(task, options, ctx)


FINISHED = []


@hookimpl
def register_executors(register):
    register("counting", Counting())


@hookimpl
def on_event(event, run):
    kill_at = int(os.environ.get("KILL_AT_FINISHED", "0"))
    if kill_at and event.type == "task_finished":
        FINISHED.append(event.task_id)
        if len(FINISHED) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def crash_run(tmp_path, bashgym_cli):
    """`args(prompts, *extra)` for a run of the counting executor; `ran()` what it ran."""
    plugin = tmp_path / "counting.py"
    plugin.write_text(PLUGIN)
    counter = tmp_path / "ran.jsonl"

    class Crash:
        out = tmp_path / "run"
        gate = tmp_path / "gate"
        env: ClassVar[dict[str, str]] = {"COUNTER": str(counter), "GATE": str(tmp_path / "gate")}

        @staticmethod
        def args(prompts: list[str], *extra: str) -> list[str]:
            tasks = tmp_path / "tasks.txt"
            tasks.write_text("\n".join(prompts) + "\n")
            return [
                "run", "--plugin", str(plugin), "-s", "prompts", "--set",
                f"source.path={tasks}", "-x", "counting", "-e", "local", "-k", "parquet",
                "--out", str(tmp_path / "run"), *extra,
            ]  # fmt: skip

        @staticmethod
        def ran() -> list[list]:
            return [json.loads(line) for line in _lines(counter)]

        @staticmethod
        def start(args: list[str], **env: str) -> subprocess.Popen:
            cmd = [str(Path(sys.executable).with_name("bashgym")), *args]
            full = {**os.environ, **bashgym_cli.env.env(), **Crash.env, **env}
            return subprocess.Popen(
                cmd, cwd=bashgym_cli.env.workdir, env=full, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip

        @staticmethod
        def again(args: list[str], **env: str):
            Crash.gate.touch()
            return bashgym_cli.subprocess(*args, env={**Crash.env, **env})

    return Crash


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def _open_when(crash_run, started: int) -> None:
    while len(crash_run.ran()) < started:
        time.sleep(0.02)
    crash_run.gate.touch()


def _wait(what, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_killed_right_after_a_task_finished_no_finished_task_runs_again(crash_run):
    """SIGKILL at the instant the 2nd `task_finished` is logged (where the row used to be not
    yet stored): on resume, every task ran exactly once, and run.json's usage and cost are
    those of both attempts."""
    prompts = [f"task {i}" for i in range(4)]
    args = crash_run.args(prompts, "--concurrency", "1")
    crash_run.gate.touch()
    first = crash_run.start(args, KILL_AT_FINISHED="2")
    first.wait(timeout=120)
    assert first.returncode == -signal.SIGKILL
    finished = [e.task_id for e in read_events(crash_run.out / "events.jsonl")
                if e.type == "task_finished"]  # fmt: skip
    assert len(finished) == 2

    result = crash_run.again(args)
    assert result.exit_code == 0, result.output
    assert Counter(p for p, _ in crash_run.ran()) == dict.fromkeys(prompts, 1)  # none twice
    assert sorted(pd.read_parquet(crash_run.out / "data.parquet")["prompt"]) == prompts
    summary = json.loads((crash_run.out / "run.json").read_text())
    assert summary["attempt"] == 2
    assert summary["cost_usd"] == pytest.approx(4 * 0.25)  # both attempts, not the last one
    assert summary["usage"]["input_tokens"] == 4 * 10
    assert summary["usage_by_model"]["scripted"]["requests"] == 4


def test_a_second_process_on_a_run_dir_in_use_exits_2_naming_the_holder(crash_run, bashgym_cli):
    """While one run works in a dir, a second is refused (exit 2, one line, who holds it) and
    runs nothing; after a SIGKILL the dir is free, and what the killed run left in its
    scratch folder is removed when it resumes."""
    prompts = [f"task {i}" for i in range(3)]
    args = crash_run.args(prompts, "--concurrency", "1")
    first = crash_run.start(args)  # blocks in its first task until the gate opens
    _wait(lambda: len(crash_run.ran()) == 1, first)

    second = bashgym_cli.subprocess(*args, env=crash_run.env)
    assert second.exit_code == 2, second.output
    message = second.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert f"in use by a running bashgym (pid {first.pid} on " in message
    assert "since" in message and "counting" in message  # when, and the command
    assert len(crash_run.ran()) == 1  # the second process ran no task

    # the environment's TMPDIR for the task in flight (local and bubblewrap make it there)
    assert len(list((crash_run.out / "bashgym-scratch").glob("bashgym-tmp-*"))) == 1
    first.send_signal(signal.SIGKILL)
    first.wait()
    result = crash_run.again(args)
    assert result.exit_code == 0, result.output
    assert not (crash_run.out / "bashgym-scratch").exists()  # the killed attempt's scratch is gone
    runs = Counter(p for p, _ in crash_run.ran())
    assert runs == {"task 0": 2, "task 1": 1, "task 2": 1}  # only the one in flight again


def test_the_budget_holds_across_attempts(crash_run):
    """$0.50 a task and a $1.00 cap: one task finished before a SIGKILL, so after resuming one
    more runs and the third is not started; it is counted as dropped for the budget."""
    run_file = crash_run.out.parent / "run.toml"
    run_file.write_text("budget_usd = 1.0\nconcurrency = 1\n")
    args = crash_run.args(["a", "b", "c"])
    args = [args[0], str(run_file), *args[1:]]
    crash_run.gate.touch()
    first = crash_run.start(args, KILL_AT_FINISHED="1", COST="0.5")
    first.wait(timeout=120)
    assert first.returncode == -signal.SIGKILL

    result = crash_run.again(args, COST="0.5")
    assert result.exit_code == 0, result.output
    assert [p for p, _ in crash_run.ran()] == ["a", "b"]
    summary = json.loads((crash_run.out / "run.json").read_text())
    assert summary["cost_usd"] == pytest.approx(1.0)
    reason = "executor counting: budget: the run's budget_usd was spent before it started"
    assert summary["counts"]["dropped"] == {reason: 1}
    assert crash_run.ran()[1][1] == pytest.approx(0.5)  # task b was given only what was left


def test_tasks_after_the_cap_do_not_start_and_are_counted(bashgym_cli, crash_run, monkeypatch):
    """Three tasks of $0.50 under a $1.00 cap, one at a time: the third never starts."""
    for name, value in {**crash_run.env, "COST": "0.5"}.items():
        monkeypatch.setenv(name, value)
    crash_run.gate.touch()
    run_file = crash_run.out.parent / "run.toml"
    run_file.write_text("budget_usd = 1.0\nconcurrency = 1\n")
    args = crash_run.args(["a", "b", "c"])
    result = bashgym_cli(args[0], str(run_file), *args[1:])
    assert result.exit_code == 0, result.output
    assert crash_run.ran() == [["a", 1.0], ["b", 0.5]]
    summary = json.loads((crash_run.out / "run.json").read_text())
    assert summary["cost_usd"] == pytest.approx(1.0) and summary["counts"]["kept"] == 2
    reason = "executor counting: budget: the run's budget_usd was spent before it started"
    assert summary["counts"]["dropped"] == {reason: 1}


def test_tasks_in_flight_together_never_get_more_than_is_left(bashgym_cli, crash_run, monkeypatch):
    """Three tasks at once under a $0.90 cap (an agent CLI reports its cost only at its end):
    each is given a third, so together they can never spend more than the cap."""
    for name, value in {**crash_run.env, "COST": "0.2"}.items():
        monkeypatch.setenv(name, value)
    opener = threading.Thread(target=_open_when, args=(crash_run, 3), daemon=True)
    opener.start()  # the gate opens once all three have started: none ends before
    run_file = crash_run.out.parent / "run.toml"
    run_file.write_text("budget_usd = 0.9\nconcurrency = 3\n")
    args = crash_run.args(["a", "b", "c"])
    result = bashgym_cli(args[0], str(run_file), *args[1:])
    assert result.exit_code == 0, result.output
    given = [left for _, left in crash_run.ran()]
    assert given == pytest.approx([0.3, 0.3, 0.3])
    summary = json.loads((crash_run.out / "run.json").read_text())
    assert summary["cost_usd"] == pytest.approx(0.6) and summary["counts"]["kept"] == 3


def test_starting_over_in_a_run_dir_reuses_nothing_of_the_old_run(
    bashgym_cli, crash_run, monkeypatch
):
    """--fresh (or another config) in a dir that holds a run: its tasks run again, and run.json
    counts only the new run's cost (the old store and log went with the old run)."""
    for name, value in crash_run.env.items():
        monkeypatch.setenv(name, value)
    crash_run.gate.touch()
    assert bashgym_cli(*crash_run.args(["a", "b"])).exit_code == 0
    result = bashgym_cli(*crash_run.args(["a", "b"], "--fresh"))
    assert result.exit_code == 0, result.output
    assert [p for p, _ in crash_run.ran()] == ["a", "b", "a", "b"]
    summary = json.loads((crash_run.out / "run.json").read_text())
    assert summary["attempt"] == 1 and summary["cost_usd"] == pytest.approx(2 * 0.25)
    started = [e for e in read_events(crash_run.out / "events.jsonl") if e.type == "run_started"]
    assert len(started) == 1


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (
            "workspace.template={missing}",  # refused with the settings, before any folder
            "the run's [workspace] table: template: does not exist (got '{missing}')",
        ),
        ("workspace.repo={missing}", "workspace.repo '{missing}' cannot be read by git: "),
        ("workspace.ref=v1", "workspace.ref 'v1' needs workspace.repo"),
    ],
)
def test_a_workspace_that_is_not_there_is_said_before_any_task(
    bashgym_cli, crash_run, monkeypatch, tmp_path, setting, expected
):
    for name, value in crash_run.env.items():
        monkeypatch.setenv(name, value)
    missing = str(tmp_path / "nowhere")
    result = bashgym_cli(*crash_run.args(["a"], "--set", setting.format(missing=missing)))
    assert result.exit_code == 2, result.output
    assert f"error: {expected.format(missing=missing)}" in result.output
    assert "Traceback" not in result.output and crash_run.ran() == []


def test_a_ref_the_repo_does_not_have_is_said_before_any_task(
    bashgym_cli, crash_run, monkeypatch, tmp_path
):
    for name, value in crash_run.env.items():
        monkeypatch.setenv(name, value)
    crash_run.gate.touch()
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    for ref, ok in (("nope", False), ("deadbeef", False), (sha.strip()[:10], True)):
        args = crash_run.args(["a"], "--set", f"workspace.repo={repo}", "--set",
                              f"workspace.ref={ref}", "--fresh")  # fmt: skip
        result = bashgym_cli(*args)
        if ok:
            assert result.exit_code == 0, result.output
        else:
            assert result.exit_code == 2, result.output
            assert (
                f"workspace.ref {ref!r} is not a branch, tag or commit of {repo}" in result.output
            )
    assert [p for p, _ in crash_run.ran()] == ["a"]


@pytest.mark.parametrize("value", ["inf", "1e999", "nan", "0", "-5"])
@pytest.mark.parametrize("key", ["task_timeout_s", "budget_usd"])
def test_a_limit_must_be_a_finite_positive_number(bashgym_cli, crash_run, tmp_path, key, value):
    """`inf` is not "no limit" (that is leaving it out): a run refuses it before it starts."""
    run_file = tmp_path / "limits.toml"
    run_file.write_text(f"{key} = {value}\n")
    args = crash_run.args(["a"])
    result = bashgym_cli(args[0], str(run_file), *args[1:])
    assert result.exit_code == 2, result.output
    assert key in result.output and "Traceback" not in result.output
    assert not crash_run.out.exists()
