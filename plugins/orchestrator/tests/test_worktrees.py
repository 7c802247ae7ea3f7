"""The job's git, on real repositories: a worktree a task made hostile is still committed on
the right branch with nothing of the task's run, hooks never run, a conflict is aborted and
named, and copied files stay out of the task's commit."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.worktrees import (
    GitError,
    Repository,
    Uncommittable,
    _half_made,
    copy_files,
    tasks_doing,
)

from bashgym.contracts import InputError
from bashgym.records import Completed


def test_hostile_worktree_commits_on_its_own_branch(repo: Path, tmp_path: Path, orch: Any) -> None:
    ran = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    evil = tmp_path / "evil"
    evil.mkdir()
    orch.git(evil, "init", "-q")
    (evil / ".git" / "config").write_text(f"[core]\n\tfsmonitor = touch {ran}\n")

    async def scenario() -> tuple[bool, str, Any]:
        git = Repository(repo)
        base = await git.commit_of("main")
        tree = await git.add_worktree(tmp_path / "wt" / "t1", "bashgym/job/t1", base)
        # the task rewrites its .git file to point elsewhere, and adds files
        (tree.path / ".git").write_text(f"gitdir: {evil / '.git'}\n")
        (tree.path / "new.txt").write_text("new\n")
        (tree.path / ".env").write_text("SECRET=1\n")
        committed = await git.commit_all(tree, "t1", keep_out=[".env"])
        return committed, await git.tip(tree), await git.diff(tree, base)

    committed, tip, diff = asyncio.run(scenario())
    assert committed and diff.files == ["new.txt"]  # .env (a copied file) is not committed
    assert orch.git(repo, "rev-parse", "bashgym/job/t1") == tip
    assert orch.git(repo, "show", "bashgym/job/t1:new.txt") == "new"
    assert not ran.exists(), "a hook or the task's git config ran on the host"
    assert orch.git(evil, "rev-parse", "--all") == ""  # nothing went to the repo it pointed at
    assert orch.git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_conflict_is_aborted_and_named(repo: Path, tmp_path: Path, orch: Any) -> None:
    async def scenario() -> Any:
        git = Repository(repo)
        base = await git.commit_of("main")
        into = await git.open_worktree(tmp_path / "wt" / "integration", "bashgym/j/integration",
                                       base)  # fmt: skip
        results = []
        for name in ("one", "two"):
            tree = await git.add_worktree(tmp_path / "wt" / name, f"bashgym/j/{name}", base)
            (tree.path / "shared.txt").write_text(f"{name}\n")
            await git.commit_all(tree, name, keep_out=[])
            results.append(await git.merge(into, f"bashgym/j/{name}", f"Merge {name}"))
        return into, results

    into, (first, second) = asyncio.run(scenario())
    assert first.outcome == "merged" and first.commit
    assert second.outcome == "conflicted" and second.conflicts == ["shared.txt"]
    assert orch.git(repo, "rev-parse", "bashgym/j/integration") == first.commit
    assert (into.path / "shared.txt").read_text() == "one\n"  # the merge was aborted cleanly
    assert not any(os.scandir(into.admin)) or not (into.admin / "MERGE_HEAD").exists()
    assert orch.git(repo, "rev-parse", "bashgym/j/two")  # the conflicting branch is kept


def test_copy_files_stay_inside(repo: Path, tmp_path: Path) -> None:
    (repo / ".env").write_text("X=1\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    assert copy_files(repo, tree, [".env", "missing.txt"]) == [".env"]
    assert (tree / ".env").read_text() == "X=1\n"
    with pytest.raises(InputError, match="not a path inside"):
        copy_files(repo, tree, ["../outside"])


def test_a_job_name_no_other_job_uses(repo: Path, orch: Any) -> None:
    orch.git(repo, "branch", "bashgym/job/a")
    names = (
        asyncio.run(Repository(repo).unused_job_name("job")),
        asyncio.run(Repository(repo).unused_job_name("other")),
    )
    assert names == ("job-2", "other")


def test_a_worktree_deleted_by_hand_is_made_again(repo: Path, tmp_path: Path, orch: Any) -> None:
    """remove_worktree runs no git command for a path git has no record of; a path whose
    folder went but whose record stayed (rm -rf of a worktree) has its record removed, by its
    name: a worktree of the user's whose folder is away keeps its record."""
    import shutil

    orch.git(repo, "worktree", "add", "-q", "-b", "usb", str(tmp_path / "usb"))
    (tmp_path / "usb").rename(tmp_path / "unplugged")

    async def scenario() -> Any:
        git = Repository(repo)
        base = await git.commit_of("main")
        path = tmp_path / "wt" / "t1"
        assert not git._recording(path)
        await git.add_worktree(path, "bashgym/job/t1", base)
        assert git._recording(path)
        shutil.rmtree(path)
        assert git._recording(path)  # git still records it: `worktree add` would refuse
        return await git.add_worktree(path, "bashgym/job/t1", base)

    tree = asyncio.run(scenario())
    assert (tree.path / "README.md").is_file()
    listed = orch.git(repo, "worktree", "list", "--porcelain")
    assert listed.count(f"worktree {tree.path}") == 1
    assert f"worktree {tmp_path / 'usb'}" in listed


def test_worktrees_removed_together(repo: Path, tmp_path: Path, orch: Any) -> None:
    """The job's end removes its worktrees with no git command: folders gone, git's records of
    them gone (one deleted by hand too), branches kept, the user's checkout untouched, and a
    worktree of the user's whose folder is away (an unmounted disk) still recorded."""
    import shutil

    orch.git(repo, "worktree", "add", "-q", "-b", "usb", str(tmp_path / "usb"))
    (tmp_path / "usb").rename(tmp_path / "unplugged")

    async def scenario() -> list[Path]:
        git = Repository(repo)
        base = await git.commit_of("main")
        paths = [tmp_path / "wt" / t for t in ("t1", "t2", "t3")]
        for path in paths:
            await git.add_worktree(path, f"bashgym/job/{path.name}", base)
        shutil.rmtree(paths[2])  # by hand: the folder gone, git's record left
        await git.remove_worktrees([*paths, tmp_path / "wt" / "never-made"])
        return paths

    paths = asyncio.run(scenario())
    assert not any(p.exists() for p in paths)
    listed = orch.git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 2 and f"worktree {repo}" in listed
    assert f"worktree {tmp_path / 'usb'}" in listed
    assert os.listdir(repo / ".git" / "worktrees") == ["usb"]
    branches = orch.git(repo, "branch", "--format=%(refname:short)").split()
    assert {"bashgym/job/t1", "bashgym/job/t2", "bashgym/job/t3"} <= set(branches)
    assert "not committed" in (repo / "README.md").read_text()


def test_worktrees_added_at_once_all_come(repo: Path, tmp_path: Path, orch: Any) -> None:
    """Tasks that start together add their worktrees at once: each is made (git reads every
    admin dir as it adds one and failed on another's half made: 'failed to read
    .../commondir'; it is tried again), ten rounds of eight."""

    async def scenario(round_: int) -> list[Any]:
        git = Repository(repo)
        adds = [
            git.add_worktree(tmp_path / f"j{round_}" / f"t{i}", f"bashgym/j{round_}/t{i}", "main")
            for i in range(8)
        ]
        return await asyncio.gather(*adds, return_exceptions=True)

    for round_ in range(10):
        made = asyncio.run(scenario(round_))
        assert [m for m in made if isinstance(m, BaseException)] == []
    assert len(os.listdir(repo / ".git" / "worktrees")) == 80


def test_only_what_the_task_left_is_uncommittable(repo: Path, tmp_path: Path) -> None:
    """`git add` failing on a name the task left that git will not take is the task's (a failed
    attempt, retried), and so is failing on the `index.lock` a git the task ran left in its
    worktree's admin dir (killed before it let go): said in words, the lock left where it is
    (a process of the task's could still hold it)."""

    async def scenario() -> tuple[BaseException, BaseException, Path]:
        git = Repository(repo)
        base = await git.commit_of("main")
        tree = await git.add_worktree(tmp_path / "wt" / "t1", "bashgym/job/t1", base)
        (tree.path / ".GIT").write_text("x\n")  # git refuses the name: "invalid path '.GIT'"
        with pytest.raises(Uncommittable) as task_left:
            await git.commit_all(tree, "t1", keep_out=[])
        (tree.path / ".GIT").unlink()
        (tree.path / "new.txt").write_text("new\n")
        (tree.admin / "index.lock").write_text("")  # a git killed before it let go
        with pytest.raises(Uncommittable) as lock_left:
            await git.commit_all(tree, "t1", keep_out=[])
        return task_left.value, lock_left.value, tree.admin / "index.lock"

    task_left, lock_left, lock = asyncio.run(scenario())
    assert "invalid path '.GIT'" in str(task_left)
    assert str(lock_left).startswith("a git command the task ran left .git/worktrees/t1/index.lock")
    assert lock.exists()  # not deleted: the attempt fails, the next one has a fresh worktree


def test_which_git_add_failures_are_the_tasks() -> None:
    """git's own words (LC_ALL=C) for the failures that cannot be made here (a file root can
    read anyway, a full disk, a signal)."""

    def done(output: str, exit_code: int | None = 128, timed_out: bool = False) -> Completed:
        return Completed(exit_code, output, "exit", 0.1, timed_out)

    tasks = [
        "error: 'sub/' does not have a commit checked out\nfatal: adding files failed\n",
        'error: open("secret.txt"): Permission denied\n'
        "error: unable to index file 'secret.txt'\nfatal: adding files failed\n",
        "error: read error while indexing big.bin: Is a directory\n"
        "error: unable to index file 'big.bin'\nfatal: adding files failed\n",
        "warning: could not open directory 'd/': Permission denied\n"
        "error: invalid path 'd/git~1'\nerror: unable to add 'd/git~1' to index\n"
        "fatal: adding files failed\n",
    ]
    jobs = [
        "fatal: unable to write new index file\n",
        "fatal: Unable to create '/r/.git/worktrees/t1/index.lock': File exists.\n\n"
        "Another git process seems to be running in this repository\n",
        "error: insufficient permission for adding an object to repository database "
        ".git/objects\nerror: a.txt: failed to insert into database\n"
        "error: unable to index file 'a.txt'\nfatal: adding files failed\n",
        "error: open(\"a.txt\"): Input/output error\nerror: unable to index file 'a.txt'\n",
        "error: unable to create temporary file: No space left on device\n"
        "error: a.txt: failed to insert into database\n"
        "error: unable to index file 'a.txt'\nfatal: adding files failed\n",
        "fatal: something git may say some day\n",
    ]
    assert [tasks_doing(done(words)) for words in tasks] == [True] * len(tasks)
    assert [tasks_doing(done(words)) for words in jobs] == [False] * len(jobs)
    embedded = tasks[0]
    assert not tasks_doing(done(embedded, exit_code=-9))  # killed by a signal
    assert not tasks_doing(done(embedded, exit_code=None, timed_out=True))


def test_only_a_half_made_admin_dir_is_tried_again(repo: Path, tmp_path: Path) -> None:
    """`git worktree add` is tried again when it failed on an admin dir another add is making
    (its `commondir` made, not yet written: git's own words, from a real one), not for any
    'failed to read' whose path holds a `worktrees` folder (every job's task worktrees do)."""
    half = repo / ".git" / "worktrees" / "half"
    half.mkdir(parents=True)
    (half / "gitdir").write_text(f"{tmp_path / 'other' / '.git'}\n")
    (half / "HEAD").write_text("ref: refs/heads/main\n")
    (half / "commondir").write_text("")

    async def scenario() -> str:
        git = Repository(repo)
        with pytest.raises(GitError) as failed:
            await git.add_worktree(tmp_path / "job" / "worktrees" / "t1", "bashgym/j/t1", "main")
        return str(failed.value)

    words = asyncio.run(scenario())
    assert "failed to read" in words and words.endswith("commondir: Success"), words
    assert _half_made(words)
    assert not _half_made(f"git worktree failed: fatal: failed to read {tmp_path}/job/worktrees/t1")
    assert not _half_made("fatal: failed to read /jobs/j/worktrees/t1/.git: Permission denied")


def test_a_job_name_when_the_branches_cannot_be_read(repo: Path, orch: Any) -> None:
    """A repository whose refs git cannot list (a broken packed-refs) gives a GitError in git's
    words at once, not a name asked for forever; a branch `bashgym/<name>` with nothing under
    it (it would block `bashgym/<name>/...`) takes the name too."""
    orch.git(repo, "branch", "bashgym/job")
    assert asyncio.run(Repository(repo).unused_job_name("job")) == "job-2"
    (repo / ".git" / "packed-refs").write_text("garbage line\n")

    async def scenario() -> str:
        return await asyncio.wait_for(Repository(repo).unused_job_name("job"), timeout=30)

    with pytest.raises(GitError, match=r"unexpected line in \S*/\.git/packed-refs: garbage line"):
        asyncio.run(scenario())
