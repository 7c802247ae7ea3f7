"""What a person reads about a job that failed a task, then was retried (real git, the `shell`
test executor): the retry does not claim the job was interrupted, each attempt line carries
the task's real attempt number, the wall time covers the same runs as the critical path, a
blocked task is not called blocked twice, and the worktrees the job keeps are named with the
command that removes them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.plan import read_plan, write_plan


def said(result: Any) -> str:
    """The CLI's output on one line (a message may wrap at the console's width)."""
    return " ".join(result.output.split())


@pytest.mark.slow
def test_a_retried_job_says_what_happened(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [  # a takes a second an attempt, and its check is wrong: 2 attempts, failed
        orch.shell_task("a", "sleep 1; echo A > a.txt", check="grep -q B a.txt"),
        orch.shell_task("b", "cat a.txt > b.txt", deps=("a",)),
        orch.shell_task("c", "echo C > c.txt"),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    run = ("-x", "shell", "-e", "local", "--plugin", orch.shell_plugin, "--retries", "1")
    first = bashgym_cli("orchestrate", "run", job.dir, *run)
    assert first.exit_code == 0, first.output
    text = said(first)
    # the blocked task: its state once, then why
    assert "blocked b: depends on" in text and "blocked b: blocked" not in text, text
    table = bashgym_cli("orchestrate", "status", job.dir)
    assert "blocked: depends" not in " ".join(table.stdout.split()), table.stdout
    # the failed task's worktree stays, and the last lines say where and how to drop it
    result = job.result()
    assert result is not None and result["kept_worktrees"] == ["a"], result
    kept = job.worktrees / "a"
    assert kept.is_dir()
    assert f"worktrees kept for a look: {kept}" in text, text
    remove = f"git -C {shlex.quote(str(repo))} worktree remove {shlex.quote(str(kept))}"
    assert remove in text, text

    plan = read_plan(job.plan_file)
    plan.task("a").check = "grep -q A a.txt"  # the fix
    write_plan(plan, job.plan_file)
    again = bashgym_cli("orchestrate", "retry", job.dir, "a")
    assert again.exit_code == 0, again.output
    text = said(again)
    # a retry is not an interrupted run: the line and the event say what it is
    assert "interrupted" not in text, text
    assert f"resuming {job.dir} (attempt 2) to retry its failed tasks" in text, text
    started = [e for e in orch.events(job) if e["type"] == "run_started"]
    assert [e["resumed_from"] for e in started] == [None, "retrying"], started
    # attempts numbered as job.json counts them: a had 2 before the retry
    assert "a: started attempt 3 on shell" in text and "b: started attempt 1 on shell" in text
    assert "started attempt 1 on shell" not in text.replace("b: started attempt 1", ""), text
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 3}, result
    assert result["tasks"]["a"]["attempts"] == 3
    # the critical path (a, b) adds a's 3 attempts (3 s and more); the wall counts both runs
    assert result["critical_path"] == ["a", "b"]
    assert result["critical_path_s"] >= 3.0, result
    assert result["wall_s"] >= result["critical_path_s"], result
    assert re.search(r"wall [\d.]+s over 2 runs against [\d.]+s on the critical path", text), text
    assert json.loads((job.dir / "run.json").read_text())["status"] == "ok"
    # everything merged: no worktree is kept, and no line says one is
    assert result["kept_worktrees"] == [] and "worktrees kept" not in text, text
