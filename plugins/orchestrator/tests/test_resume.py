"""A job in another process: `status` and `cancel` from here while it runs, `kill -9` in the
middle, then `resume`: every task ends exactly once, and nothing of a stopped worker lives on."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.planning import Spend
from bashgym_testing.waiting import wait_while_running

from bashgym.records import Usage

BASHGYM = shutil.which("bashgym") or str(Path(sys.executable).with_name("bashgym"))


def start(env: Any, job: Path, plugin: str, *more: str) -> subprocess.Popen[bytes]:
    argv = [
        BASHGYM,
        "orchestrate",
        "run",
        str(job),
        "-x",
        "shell",
        "--plugin",
        plugin,
        "-e",
        "local",
        "-k",
        "nemo-jsonl",
        *more,
    ]
    return subprocess.Popen(
        argv,
        env={**os.environ, **env.env()},
        cwd=env.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def count(orch: Any, job: Any, kind: str) -> int:
    if not (job.dir / "events.jsonl").is_file():
        return 0
    return sum(e["type"] == kind for e in orch.events(job))


def living(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker` (a worker's command runs in a
    PID namespace, so its own `$$` says nothing here)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z" and int(proc.name) != os.getpid():
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_kill_9_mid_job_then_resume_ends_each_task_once(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("a", "sleep 0.5; echo a > a.txt"),
        orch.shell_task("b", "sleep 3; echo b > b.txt"),
        orch.shell_task("c", "sleep 0.5; echo c > c.txt", deps=("a",)),
        orch.shell_task("d", "echo d > d.txt", deps=("b", "c")),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f d.txt")
    job.save_planning(Spend(requests=2, usage=Usage(input_tokens=900), cost_usd=0.25, model="m"))
    proc = start(bashgym_env, job.dir, orch.shell_plugin, "--workers", "2")
    # mid-job: a task has ended (its trace written to the sink) and another is still running
    wait_while_running(
        lambda: count(orch, job, "task_finished") >= 1 and len(sft_lines(job)) >= 2, proc
    )
    assert count(orch, job, "task_started") > count(orch, job, "task_finished")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = sft_lines(job)  # what the sink held at the kill: complete lines, each once
    assert len(set(kept)) == len(kept) and "Task a: task a" in {k[:14] for k in kept}

    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    # run.json says running as the kill left it, but no one holds the job: interrupted, as
    # its tasks in flight are
    assert status["status"] == "interrupted" and status["pid"] is None
    assert "interrupted" in {t["state"] for t in status["tasks"].values()}
    done = bashgym_cli("orchestrate", "resume", job.dir)

    assert done.exit_code == 0, done.output
    assert orch.finished_counts(job) == {"a": 1, "b": 1, "c": 1, "d": 1}
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 4}
    assert result["verify"]["ok"] is True
    assert orch.git(repo, "show", "bashgym/job/integration:d.txt") == "d"
    merges = orch.git(repo, "log", "--merges", "--format=%s", "bashgym/job/integration")
    assert sorted(merges.splitlines()) == [f"Merge task {t}: task {t}" for t in "abcd"]
    run = json.loads((job.dir / "run.json").read_text())
    assert run["status"] == "ok" and run["attempt"] == 2
    # the resumed job rewrote the sink from its store: every attempt and the plan, once
    lines = sft_lines(job)
    assert len(lines) == len(set(lines)) == 5 and set(kept) <= set(lines)
    counts = run["counts"]
    assert counts["nemo-jsonl.train"] + counts["nemo-jsonl.val"] == 5 == counts["kept"]
    # planning charged once across the kill and the resume
    assert run["usage_by_model"]["m"]["requests"] == 2 and run["cost_usd"] == 0.25
    assert job.result()["cost_usd"] == 0.25  # type: ignore[index]


def sft_lines(job: Any) -> list[str]:
    """The first user turn of each line the nemo-jsonl sink holds now (a worker's task, or the
    plan's spec), from complete files only (the sink renames each into place)."""
    out = []
    for name in ("train.jsonl", "val.jsonl", "negatives.jsonl"):
        path = job.dir / "nemo-jsonl" / name
        text = path.read_text() if path.is_file() else ""
        for line in text.splitlines():
            messages = json.loads(line)["messages"]
            out.append(next(m["content"] for m in messages if m["role"] == "user"))
    return out


@pytest.mark.slow
def test_status_and_cancel_from_another_process_then_resume(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    hold = tmp_path / "hold"
    hold.touch()
    slow = f"echo $$ > {tmp_path}/%s.pid; if [ -f {hold} ]; then sleep 120; fi; echo %s > %s.txt"
    tasks = [orch.shell_task(t, slow % (t, t, t)) for t in ("a", "b")]
    tasks.append(orch.shell_task("c", "echo c > c.txt", deps=("a", "b")))
    job = orch.make_job(tmp_path / "job", repo, tasks)
    proc = start(bashgym_env, job.dir, orch.shell_plugin, "--workers", "2")
    pids = [tmp_path / "a.pid", tmp_path / "b.pid"]
    wait_while_running(lambda: all(p.is_file() and p.read_text().strip() for p in pids), proc)

    status = bashgym_cli("orchestrate", "status", job.dir, "--json")
    seen = json.loads(status.stdout)
    assert seen["status"] == "running" and seen["pid"] == proc.pid
    assert {t: s["state"] for t, s in seen["tasks"].items()} == {
        "a": "running",
        "b": "running",
        "c": "pending",
    }
    cancelled = bashgym_cli("orchestrate", "cancel", job.dir)
    assert cancelled.exit_code == 0, cancelled.output
    assert proc.wait(timeout=60) == 130
    assert living(str(hold)) == [], "a worker outlived the cancel"
    assert count(orch, job, "task_finished") == 0
    after = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert after["status"] == "cancelled"  # as job.json says
    assert {s["state"] for s in after["tasks"].values()} == {"pending"}

    hold.unlink()
    done = bashgym_cli("orchestrate", "resume", job.dir)
    assert done.exit_code == 0, done.output
    assert orch.finished_counts(job) == {"a": 1, "b": 1, "c": 1}
    assert job.result()["counts"] == {"merged": 3}  # type: ignore[index]


@pytest.mark.slow
def test_a_cancelled_job_counts_the_tasks_it_never_ran(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """job.json, the run's last lines and `status` say the same true counts: merged, failed,
    and pending (the task stopped mid-run and the two that never started), none `running`;
    and a worktree the stopped task made itself is not left registered."""
    hold, pid = tmp_path / "hold", tmp_path / "b.pid"
    hold.touch()
    tasks = [
        orch.shell_task("a", "echo a > a.txt"),
        orch.shell_task("f", "false"),
        orch.shell_task(
            "b",
            f"git worktree add -q -b extra ../b-extra HEAD && echo $$ > {pid}; "
            f"while [ -f {hold} ]; do sleep 0.1; done; echo b > b.txt",
            deps=("a",),
        ),
        orch.shell_task("c", "echo c > c.txt", deps=("b",)),
        orch.shell_task("d", "echo d > d.txt", deps=("b",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    proc = start(bashgym_env, job.dir, orch.shell_plugin, "--workers", "2", "--retries", "0")
    wait_while_running(lambda: pid.is_file() and count(orch, job, "task_finished") == 2, proc)

    cancelled = bashgym_cli("orchestrate", "cancel", job.dir)
    assert cancelled.exit_code == 0, cancelled.output
    assert proc.wait(timeout=60) == 130
    said = " ".join(proc.stdout.read().decode().split())  # type: ignore[union-attr]
    # both the job's own lines and `cancel` name the worktrees the job keeps in the user's
    # repository for `resume`, and the commands that drop them for a job given up
    kept = [job.worktrees / n for n in ("a", "b", "f", "integration")]
    drop = " && ".join(
        f"git -C {shlex.quote(str(repo))} worktree remove --force {shlex.quote(str(p))}"
        for p in kept
    )
    for text in (said, " ".join(cancelled.output.split())):
        assert f"orchestrate resume {job.dir}" in text, text
        assert f"worktrees kept for `orchestrate resume`: {', '.join(map(str, kept))}" in text
        assert f"to give the job up instead: {drop}" in text, text

    counts = {"failed": 1, "merged": 1, "pending": 3}
    result = job.result()
    assert result is not None and result["status"] == "cancelled"
    assert result["counts"] == counts, result["counts"]
    assert {t: s["state"] for t, s in result["tasks"].items() if s["state"] == "pending"} == {
        "b": "pending",
        "c": "pending",
        "d": "pending",
    }
    assert "1 failed, 1 merged, 3 pending" in said, said
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert status["counts"] == counts
    table = bashgym_cli("orchestrate", "status", job.dir).stdout
    assert "cancelled (1 failed, 1 merged, 3 pending)" in table, table
    # one word and one count: the job `cancelled` in both; b's stopped attempt is not one (it
    # is pending again, and `resume` runs it as attempt 1)
    assert status["status"] == result["status"] == "cancelled"
    tries = {"a": 1, "f": 1, "b": 0, "c": 0, "d": 0}
    assert {t: s["attempts"] for t, s in status["tasks"].items()} == tries, status["tasks"]
    assert {t: s["attempts"] for t, s in result["tasks"].items()} == tries, result["tasks"]
    # the job's own worktrees stay for `resume`; the one task b made does not
    assert sorted(os.listdir(repo / ".git" / "worktrees")) == ["a", "b", "f", "integration"]
    hold.unlink()
    # the commands said drop them (b's stopped attempt left uncommitted work: --force)
    subprocess.run(["bash", "-c", drop], check=True, capture_output=True)
    assert orch.git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not any(p.exists() for p in kept)


@pytest.mark.slow
def test_ctrl_c_leaves_job_json_saying_interrupted(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """After Ctrl-C job.json no longer says the job or a task is running."""
    hold, pid = tmp_path / "hold", tmp_path / "b.pid"
    hold.touch()
    tasks = [
        orch.shell_task("a", "echo a > a.txt"),
        orch.shell_task(
            "b", f"echo $$ > {pid}; while [ -f {hold} ]; do sleep 0.1; done", deps=("a",)
        ),
        orch.shell_task("c", "echo c > c.txt", deps=("b",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    proc = start(bashgym_env, job.dir, orch.shell_plugin)
    wait_while_running(lambda: pid.is_file() and pid.read_text().strip(), proc)

    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    said = " ".join(proc.stdout.read().decode().split())  # type: ignore[union-attr]
    hold.unlink()

    result = job.result()
    assert result is not None and result["status"] == "interrupted"
    assert result["counts"] == {"merged": 1, "pending": 2}, result["counts"]
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert status["status"] == "interrupted"
    tries = {t: s["attempts"] for t, s in status["tasks"].items()}
    assert (
        tries == {t: s["attempts"] for t, s in result["tasks"].items()} == {"a": 1, "b": 0, "c": 0}
    )
    assert "stopped (Ctrl-C): 1 merged, 2 pending;" in said, said
