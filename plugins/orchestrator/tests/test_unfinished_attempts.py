"""An attempt that did not run to its end never stays `running` once the job is over, and git's
lock a task's own git left behind fails that attempt, not the job.

1. Task code that runs after the worker (the task's check runs the task's own files) breaks
   what the orchestrator needs to clean up after a failed attempt (under `local` it can swap
   its worktree's admin dir in the user's `.git` for a link: git is then not run there). The
   attempt ends `failed` with that reason, counted once in job.json and `orchestrate status`
   alike, and nothing in the run store says `running`.
2. A git the task ran itself, killed half way (its command's timeout), leaves `index.lock` in
   its worktree's admin dir. The orchestrator's `git add` then cannot run there: that attempt
   fails with the reason in plain words and is tried again in a fresh worktree; the lock file
   is never deleted where it is (a process of the task's could still hold it)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

RUN = ("-x", "shell", "-e", "local")


def store_states(job: Any) -> dict[str, str]:
    """Each run-store item of the job's tasks and attempts, and its state."""
    db = sqlite3.connect(job.dir / "state.db")
    try:
        rows = db.execute(
            "SELECT namespace, key, state FROM items WHERE namespace IN ('tasks', 'attempts')"
        ).fetchall()
    finally:
        db.close()
    return {f"{ns}/{key}": state for ns, key, state in rows}


# the check runs this file, which the worker wrote: it moves the worktree's admin dir (named
# by its `.git` file) away and leaves a link in its place, then fails
SWAP_ADMIN = (
    "printf '%s\\n' "
    "'admin=$(sed \"s/^gitdir: //\" .git)' "
    '\'mv "$admin" "$admin.moved" && ln -s "$admin.moved" "$admin"\' '
    "'exit 1' > check.sh"
)


@pytest.mark.slow
def test_an_attempt_whose_clean_up_raised_ends_failed_not_running(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [orch.shell_task("a", SWAP_ADMIN, check="sh check.sh")]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "1"
    )

    assert "Traceback" not in done.output
    assert done.exit_code == 1, done.output  # no task merged
    states = store_states(job)
    assert "running" not in states.values(), states
    assert states == {"tasks/a": "failed", "attempts/a#1": "done"}, states
    result = job.result()
    assert result is not None and result["status"] == "failed"
    entry = result["tasks"]["a"]
    assert entry["state"] == "failed" and entry["attempts"] == 1, entry
    reason = entry["reason"]
    assert "check `sh check.sh` failed" in reason, reason
    assert "no longer a folder" in reason and "orchestrator error" not in reason, reason
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert status["status"] == "failed"
    assert status["tasks"]["a"]["state"] == "failed"
    assert status["tasks"]["a"]["attempts"] == 1, status["tasks"]["a"]
    assert status["tasks"]["a"]["reason"] == reason
    finished = [e for e in orch.events(job) if e["type"] == "task_failed"]
    assert [(e["attempt"], e["final"]) for e in finished] == [(1, True)], finished


@pytest.mark.slow
def test_an_index_lock_the_tasks_own_git_left_fails_that_attempt_only(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    once = tmp_path / "lock-left-once"
    # the first attempt's git "was killed" half way: the lock it held stays in the worktree's
    # admin dir (named by the worktree's `.git` file), as a killed `git add` leaves it
    leave_lock = (
        f"echo A > a.txt && if [ ! -e {once} ]; then touch {once} && "
        'admin=$(sed "s/^gitdir: //" .git) && : > "$admin/index.lock"; fi'
    )
    tasks = [orch.shell_task("a", leave_lock), orch.shell_task("b", "echo B > b.txt")]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "1"
    )

    assert "Traceback" not in done.output
    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["status"] == "done"
    assert {t: s["state"] for t, s in result["tasks"].items()} == {"a": "merged", "b": "merged"}
    assert result["tasks"]["a"]["attempts"] == 2 and result["tasks"]["b"]["attempts"] == 1
    failed = [e for e in orch.events(job) if e["type"] == "task_failed"]
    assert [(e["task_id"], e["attempt"], e["final"]) for e in failed] == [("a", 1, False)]
    reason = failed[0]["reason"]
    assert "index.lock" in reason and "a git command the task ran" in reason, reason
    assert orch.git(repo, "show", "bashgym/job/integration:a.txt") == "A"
    states = store_states(job)
    assert "running" not in states.values(), states
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert {t: s["attempts"] for t, s in status["tasks"].items()} == {"a": 2, "b": 1}


@pytest.mark.slow
def test_an_index_lock_on_the_last_attempt_fails_the_task_in_words(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """No retry left: the task fails with the lock named, its worktree (and the lock, which
    the orchestrator never deletes in place) kept for a look; the other task merges."""
    leave_lock = 'echo A > a.txt && : > "$(sed "s/^gitdir: //" .git)/index.lock"'
    tasks = [orch.shell_task("a", leave_lock), orch.shell_task("b", "echo B > b.txt")]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "0"
    )

    assert "Traceback" not in done.output
    assert done.exit_code == 0, done.output  # b merged
    result = job.result()
    assert result is not None
    assert {t: s["state"] for t, s in result["tasks"].items()} == {"a": "failed", "b": "merged"}
    reason = result["tasks"]["a"]["reason"]
    assert "index.lock" in reason and "git failed after the worker ran" not in reason, reason
    assert result["kept_worktrees"] == ["a"]
    assert (repo / ".git" / "worktrees" / "a" / "index.lock").exists()


@pytest.mark.slow
def test_an_index_lock_the_merge_resolver_left_stops_only_its_merge(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """The worker resolving a conflict works in the integration worktree: a lock its own git
    left there fails that resolution (the task's branch kept, as for any conflict it could not
    resolve), and the tasks that merge after it merge."""
    both = "printf 'first line\\nfrom-b\\nfrom-c\\n' > shared.txt"
    leave_lock = ': > "$(sed "s/^gitdir: //" .git)/index.lock"'
    tasks = [
        orch.plan_task(
            t,
            f"append\n```sh\n{wait}echo from-{t} >> shared.txt\n```\n"
            f"```resolve\n{both} && {leave_lock}\n```\n",
            priority=p,
        )
        for t, p, wait in (("b", "high", ""), ("c", "normal", "sleep 2; "))
    ]
    tasks.append(orch.shell_task("d", "sleep 5; echo D > d.txt"))
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin,
        "--workers", "3", "--resolve-conflicts",
    )  # fmt: skip

    assert "Traceback" not in done.output
    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    states = {t: s["state"] for t, s in result["tasks"].items()}
    assert states == {"b": "merged", "c": "conflicted", "d": "merged"}, states
    assert orch.git(repo, "show", "bashgym/job/integration:d.txt") == "D"
    assert "running" not in store_states(job).values(), store_states(job)
    resolutions = [e for e in orch.events(job) if e["type"] == "task_finished"]
    said = {e["task_id"]: e.get("reason") or "" for e in resolutions}
    assert said["c"] == "merge conflict in shared.txt" and said["d"] == "", said
    db = sqlite3.connect(job.dir / "state.db")
    try:
        (record,) = db.execute("SELECT result FROM items WHERE key = 'c#merge'").fetchone()
    finally:
        db.close()
    reason = json.loads(record)["reason"]
    assert reason.startswith("a git command the task ran left .git/worktrees/"), reason
    assert reason.endswith(
        "/index.lock behind (stopped before it finished, by a timeout most "
        "likely), and git adds nothing while it is there"
    ), reason


ROUTER_THAT_RAISES = """
from pathlib import Path
from pydantic import Field
from bashgym import hookimpl
from bashgym.contracts import Options, Router

class Opts(Options):
    executor: str = Field(default="shell", description="the executor")

class Boom(Router[Opts]):
    def route(self, task, options, run):
        with open(Path(__file__).with_suffix(".calls"), "a") as fh:
            fh.write(task.id + "\\n")
        raise RuntimeError("router probe crashed")

@hookimpl
def register_routers(register):
    register("boom", Boom())
"""


def test_an_error_of_the_jobs_before_the_attempt_has_a_result_is_not_retried(
    bashgym_cli, no_scrub, repo, tmp_path, orch
):
    """A router that raises (a bug, a model it probes that is down) is the job's error, not the
    task's: the task fails once, with one final `task_failed`, and the router is not asked (and
    paid) again for each of `--retries`."""
    router = tmp_path / "boom_router.py"
    router.write_text(ROUTER_THAT_RAISES)
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", "echo A > a.txt")])
    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin,
        "--plugin", router, "--router", "boom", "--retries", "2",
    )  # fmt: skip
    assert "Traceback" not in done.output
    failed = [e for e in orch.events(job) if e["type"] == "task_failed"]
    assert [(e["attempt"], e["final"]) for e in failed] == [(1, True)], failed
    assert "router probe crashed" in failed[0]["reason"]
    assert router.with_suffix(".calls").read_text().split() == ["a"]
    assert job.result()["tasks"]["a"]["attempts"] == 1
    assert "running" not in store_states(job).values()
