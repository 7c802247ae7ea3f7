"""Which worktree records are a job's, on real repositories: decided by what git's own records
in the user's `.git` say (a record's `gitdir` inside the job's worktrees folder), never by when
a record was made nor by a `.git` file a task could write. A second job on the same repository
and a user's `git worktree add` while a job runs keep working; a rewritten integration `.git`
sends no reset or removal to a user's worktree; what cannot be deleted is said and the rest
goes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.plan import read_plan, write_plan
from bashgym_orchestrator.worktrees import Repository, remove_entries
from bashgym_testing.waiting import wait_while_running

RUN = ("-x", "shell", "-e", "local")
BASHGYM = shutil.which("bashgym") or str(Path(sys.executable).with_name("bashgym"))


def git_ok(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)


def commit(path: Path, message: str) -> None:
    subprocess.run(
        ["git", "-C", str(path), "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-q",
         "--allow-empty", "-m", message],
        check=True,
    )  # fmt: skip


def test_another_jobs_and_a_users_worktree_added_mid_job_are_left(
    repo: Path, tmp_path: Path, orch: Any
) -> None:
    """Job A's end removes none of the worktrees job B (same repository, started later) and
    the user (`git worktree add` in another terminal) made while A ran; A's own task-made
    strays, in A's folder, go."""
    job_a, job_b, user = tmp_path / "jobA", tmp_path / "jobB", tmp_path / "userwt"

    async def scenario() -> Any:
        a = Repository(repo)
        before = a.admin_names()
        await a.add_worktree(job_a / "worktrees" / "t1", "bashgym/a/t1", "HEAD")
        b = Repository(repo)  # a second job on the same repository
        theirs = await b.add_worktree(job_b / "worktrees" / "t1", "bashgym/b/t1", "HEAD")
        orch.git(repo, "worktree", "add", "-q", str(user), "-b", "userbr")  # the user, mid-job
        # a task of A's: a worktree of its own beside its worktree (in A's folder)
        orch.git(job_a / "worktrees" / "t1", "worktree", "add", "-q", "-b", "x", "../stray")
        strays = await a.remove_strays(job_a / "worktrees", [job_a / "worktrees" / "t1"], before)
        return theirs, strays

    theirs, strays = asyncio.run(scenario())
    assert strays.removed == 1 and strays.failed == []
    assert sorted(strays.outside) == sorted([str(theirs.path), str(user)])
    for path in (theirs.path, user, job_a / "worktrees" / "t1"):
        done = git_ok(path, "status", "--short")
        assert done.returncode == 0, done.stderr
    listed = orch.git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {user}\n" in listed and f"worktree {theirs.path}\n" in listed
    assert f"worktree {job_a / 'worktrees' / 'stray'}\n" not in listed


def test_a_rewritten_integration_git_file_is_not_followed(
    repo: Path, tmp_path: Path, orch: Any
) -> None:
    """The conflict-resolving worker's workspace is the integration worktree: it rewrites
    `.git` there to name the user's worktree's admin dir. A resume (a fresh Repository) opens
    the integration worktree by git's own record, resets it and removes it at the end: the
    user's branch does not move and their worktree stays registered and working."""
    user = tmp_path / "userwt"
    orch.git(repo, "worktree", "add", "-q", str(user), "-b", "userbr")
    commit(user, "user work")
    users_tip = orch.git(repo, "rev-parse", "userbr")
    base = orch.git(repo, "rev-parse", "main")
    integ = tmp_path / "job" / "worktrees" / "integration"

    async def scenario() -> Any:
        first = Repository(repo)
        await first.open_worktree(integ, "bashgym/job/integration", base)
        (integ / ".git").write_text(f"gitdir: {repo}/.git/worktrees/userwt\n")
        resumed = Repository(repo)  # resume / `orchestrate retry`
        tree = await resumed.open_worktree(integ, "bashgym/job/integration", base)
        await resumed.reset_to(tree, base)  # what dispatch does right after opening
        await resumed.git("commit", "-q", "--allow-empty", "-m", "merged", repo=tree.repo)
        failed = await resumed.remove_worktrees([integ])  # the job's end
        return tree, failed

    tree, failed = asyncio.run(scenario())
    assert tree.admin.name != "userwt" and failed == []
    assert orch.git(repo, "rev-parse", "userbr") == users_tip
    assert orch.git(repo, "log", "-1", "--format=%s", "bashgym/job/integration") == "merged"
    assert os.listdir(repo / ".git" / "worktrees") == ["userwt"]
    assert orch.git(user, "rev-parse", "--abbrev-ref", "HEAD") == "userbr"
    assert git_ok(user, "status", "--short").returncode == 0


def chattr_works(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_text("x")
    try:
        made = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    except OSError:
        return False
    if made:
        subprocess.run(["chattr", "-i", str(probe)], check=True)
    probe.unlink()
    return made and os.geteuid() == 0


def test_one_entry_that_cannot_go_stops_none_of_the_rest(tmp_path: Path) -> None:
    """An entry holding a file the OS will not delete (immutable; a chmod 000 folder for a user
    who is not root) is said, and every other entry is still removed."""
    if not chattr_works(tmp_path):
        pytest.skip("needs root and chattr +i on this filesystem")
    folder = tmp_path / "repo" / ".git" / "worktrees"
    for name in ("a", "b", "c"):
        (folder / name).mkdir(parents=True)
        (folder / name / "gitdir").write_text(f"/x/{name}/.git\n")
    stuck = folder / "b" / "stuck"
    stuck.write_text("x")
    subprocess.run(["chattr", "+i", str(stuck)], check=True)
    try:
        removal = remove_entries(tmp_path / "repo", (".git", "worktrees"))
        assert removal.removed == ["a", "c"]
        assert removal.failed == ["b (Operation not permitted)"]
        assert os.listdir(folder) == ["b"]
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)


@pytest.mark.slow
def test_a_record_that_cannot_be_deleted_does_not_fail_the_job(
    no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """A task (under `local`) leaves a file in its worktree's admin dir that the OS will not
    delete (made immutable here while the task waits; a chmod 000 folder does it for a user
    who is not root): the job still ends done, its other worktrees' records go, and the
    leftover is noted."""
    if not chattr_works(tmp_path):
        pytest.skip("needs root and chattr +i on this filesystem")
    stuck, go = repo / ".git" / "worktrees" / "a" / "stuck", tmp_path / "go"
    tasks = [
        orch.shell_task(
            "a",
            f'touch "$(git rev-parse --git-dir)/stuck"; while [ ! -f {go} ]; do sleep 0.1; done;'
            " echo A > a.txt",
        ),
        orch.shell_task("b", "echo B > b.txt"),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    proc = start(bashgym_env, job.dir, orch.shell_plugin)
    try:
        wait_while_running(stuck.exists, proc)
        subprocess.run(["chattr", "+i", str(stuck)], check=True)
        go.touch()
        code = proc.wait(timeout=120)
        assert code == 0, proc.stdout.read().decode()  # type: ignore[union-attr]
        result = job.result()
        assert result is not None and result["counts"] == {"merged": 2}, result["tasks"]
        assert os.listdir(repo / ".git" / "worktrees") == ["a"]  # b's record went
        notes = [e["text"] for e in orch.events(job) if e["type"] == "note"]
        said = f"could not be deleted, left in place: {repo}/.git/worktrees/a (Operation not"
        assert sum(n.startswith(said) for n in notes) == 1, notes
        assert not any("restored" in n for n in notes), notes  # the removal was the job's
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if stuck.exists():
            subprocess.run(["chattr", "-i", str(stuck)], check=True)


@pytest.mark.slow
def test_two_jobs_and_a_users_worktree_on_one_repository(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """Job A runs; meanwhile job B runs to its end on the same repository (its failed task's
    worktree kept for a look) and the user adds a worktree. When A ends, B's kept worktree and
    the user's still work, and A notes them as added while it ran."""
    go, user = tmp_path / "go", tmp_path / "userwt"
    job_a = orch.make_job(
        tmp_path / "jobA", repo,
        [orch.shell_task("a", f"while [ ! -f {go} ]; do sleep 0.1; done; echo A > a.txt")],
    )  # fmt: skip
    job_b = orch.make_job(tmp_path / "jobB", repo, [orch.shell_task("b", "echo B > b.txt")])
    plan = read_plan(job_b.plan_file)
    plan.task("b").check = "false"  # fails: B keeps its worktree
    write_plan(plan, job_b.plan_file)
    proc = start(bashgym_env, job_a.dir, orch.shell_plugin)
    try:
        wait_while_running(lambda: (job_a.dir / "worktrees" / "a" / ".git").exists(), proc)
        done = bashgym_cli(
            "orchestrate", "run", job_b.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "0"
        )
        assert done.exit_code == 1, done.output  # no task of B's merged
        orch.git(repo, "worktree", "add", "-q", str(user), "-b", "userbr")
        go.touch()
        assert proc.wait(timeout=120) == 0, proc.stdout.read().decode()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert job_a.result()["tasks"]["a"]["state"] == "merged"  # type: ignore[index]
    kept_b = job_b.dir / "worktrees" / "b"
    for path in (kept_b, user):
        status = git_ok(path, "status", "--short")
        assert status.returncode == 0, status.stderr
    listed = orch.git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {kept_b}\n" in listed and f"worktree {user}\n" in listed
    notes = [e["text"] for e in orch.events(job_a) if e["type"] == "note"]
    said = [n for n in notes if "outside the job's folder while it ran" in n]
    assert len(said) == 1 and str(kept_b) in said[0] and str(user) in said[0], notes


@pytest.mark.slow
def test_rewritten_integration_git_then_retry_leaves_the_users_branch(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """A job whose verify failed keeps its integration worktree; its `.git` is rewritten to name
    the user's worktree's admin dir (as the conflict-resolving worker could); `orchestrate
    retry` then merges into the job's integration branch, never the user's."""
    user = tmp_path / "userwt"
    orch.git(repo, "worktree", "add", "-q", str(user), "-b", "userbr")
    commit(user, "user work")
    users_tip = orch.git(repo, "rev-parse", "userbr")
    tasks = [
        orch.shell_task("a", "echo A > a.txt", check="false"),
        orch.shell_task("c", "echo C > c.txt"),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f a.txt")
    run = (*RUN, "--plugin", orch.shell_plugin, "--retries", "0")
    first = bashgym_cli("orchestrate", "run", job.dir, *run)
    assert first.exit_code == 0, first.output
    integ = job.dir / "worktrees" / "integration"
    assert (integ / ".git").is_file()  # kept: verify failed
    (integ / ".git").write_text(f"gitdir: {repo}/.git/worktrees/userwt\n")
    plan = read_plan(job.plan_file)
    plan.task("a").check = "test -f a.txt"
    write_plan(plan, job.plan_file)

    again = bashgym_cli("orchestrate", "retry", job.dir, "a")

    assert again.exit_code == 0, again.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 2}, result
    assert result["verify"]["ok"] is True
    assert orch.git(repo, "rev-parse", "userbr") == users_tip
    assert orch.git(repo, "show", "bashgym/job/integration:a.txt") == "A"
    assert os.listdir(repo / ".git" / "worktrees") == ["userwt"]
    assert orch.git(user, "rev-parse", "--abbrev-ref", "HEAD") == "userbr"
    assert git_ok(user, "status", "--short").returncode == 0


@pytest.mark.slow
def test_kill_9_then_resume_strays_go_and_attempts_agree(
    bashgym_cli: Any, no_scrub: None, bashgym_env: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """A task makes a worktree of its own, then the job is killed (-9) mid-attempt: status and
    job.json count the attempt under way alike (1); the resumed job unregisters the worktree
    the killed run's task made."""
    marker = tmp_path / "tried"
    command = (
        f"if [ ! -f {marker} ]; then touch {marker}; "
        "git worktree add -q -b extra ../sibling HEAD; sleep 60; fi; echo A > a.txt"
    )
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", command)])
    proc = start(bashgym_env, job.dir, orch.shell_plugin)
    sibling = job.dir / "worktrees" / "sibling"
    wait_while_running(lambda: (sibling / ".git").is_file(), proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    said = job.result()
    assert said is not None and said["status"] == "running"  # as the kill left it
    assert status["status"] == "interrupted"
    assert status["tasks"]["a"]["attempts"] == said["tasks"]["a"]["attempts"] == 1
    done = bashgym_cli("orchestrate", "resume", job.dir)

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["tasks"]["a"]["state"] == "merged"
    assert result["tasks"]["a"]["attempts"] == 1  # the killed one ran again under its number
    listed = orch.git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 1, listed  # the user's checkout alone
    assert not os.path.exists(repo / ".git" / "worktrees") or not os.listdir(
        repo / ".git" / "worktrees"
    )


def start(env: Any, job: Path, plugin: str) -> subprocess.Popen[bytes]:
    argv = [BASHGYM, "orchestrate", "run", str(job), *RUN, "--plugin", plugin]
    return subprocess.Popen(
        argv,
        env={**os.environ, **env.env()},
        cwd=env.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
