"""Worktrees a task makes itself (`git worktree add` run in its own worktree) in the job's
folder are the job's to remove: after the job git records none of them in the user's
repository, a path the task wrote is never followed, and a worktree the user had before the
job is left as it was; one a task made outside the job's folder looks like one the user made
meanwhile: it stays registered and is noted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.worktrees import remove_entries

RUN = ("-x", "shell", "-e", "local")


def worktrees(orch: Any, repo: Path) -> dict[str, str]:
    """`git worktree list --porcelain`: each worktree's path and its whole block."""
    blocks = orch.git(repo, "worktree", "list", "--porcelain").split("\n\n")
    return {b.splitlines()[0].removeprefix("worktree "): b for b in blocks if b.strip()}


@pytest.mark.slow
def test_worktrees_tasks_made_are_unregistered_the_users_kept(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    mine, locked = tmp_path / "my-worktree", tmp_path / "my-locked-worktree"
    orch.git(repo, "worktree", "add", "-q", "-b", "mine", str(mine))
    orch.git(repo, "worktree", "add", "-q", "--lock", "-b", "mine-locked", str(locked))
    before = worktrees(orch, repo)
    outside = tmp_path / "outside"
    add = "git worktree add -q"
    tasks = [
        # merged: one beside its worktree in the job's folder, one outside it, locked
        orch.shell_task(
            "a",
            f"{add} -b extra-a ../sibling HEAD && {add} --lock -b extra-b {outside} HEAD"
            " && echo A > a.txt",
        ),
        # failed (its worktree kept for a look): one inside its own worktree (after a: two
        # `git worktree add` at once may fail on git's ref locks)
        orch.shell_task("c", f"{add} -b extra-c nested HEAD && false", deps=("a",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "0"
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    assert {t: s["state"] for t, s in result["tasks"].items()} == {"a": "merged", "c": "failed"}
    kept = job.dir / "worktrees" / "c"  # the job's own, kept as keep_worktrees says
    now = worktrees(orch, repo)
    assert now == {**before, str(kept): now[str(kept)], str(outside): now[str(outside)]}
    admin = sorted(os.listdir(repo / ".git" / "worktrees"))
    assert admin == sorted(["c", mine.name, locked.name, outside.name]), admin
    assert (locked / ".git").is_file() and (mine / ".git").is_file()  # the user's, untouched
    assert orch.git(mine, "rev-parse", "--abbrev-ref", "HEAD") == "mine"
    assert (outside / ".git").is_file()  # a path the task wrote: not followed, not deleted
    assert not (job.dir / "worktrees" / "sibling").exists()  # the job's folder: cleaned
    assert result["kept_worktrees"] == ["c"]
    run = json.loads((job.dir / "run.json").read_text())
    assert run["counts"]["orchestrator.task_worktrees_removed"] == 2  # sibling, nested
    notes = [e["text"] for e in orch.events(job) if e["type"] == "note"]
    assert any(n.startswith("2 worktree(s) a task made") for n in notes), notes
    said = "1 worktree(s) were added to the repository outside the job's folder while it ran"
    assert any(n.startswith(said) and str(outside) in n for n in notes), notes


def test_removal_follows_no_link(tmp_path: Path) -> None:
    """A task that swapped `.git/worktrees` (or an entry in it) for a link to the user's files
    sends the removal nowhere: the link goes as a link, what it points at stays."""
    precious = tmp_path / "precious"
    (precious / "folder").mkdir(parents=True)
    (precious / "file").write_text("keep\n")
    git_dir = tmp_path / "repo" / ".git"
    git_dir.mkdir(parents=True)
    os.symlink(precious, git_dir / "worktrees")
    assert remove_entries(tmp_path / "repo", (".git", "worktrees"), set()).removed == []
    assert sorted(os.listdir(precious)) == ["file", "folder"]

    (git_dir / "worktrees").unlink()
    (git_dir / "worktrees" / "ours").mkdir(parents=True)
    (git_dir / "worktrees" / "stray").mkdir()
    (git_dir / "worktrees" / "stray" / "gitdir").write_text(f"{precious}/.git\n")
    os.symlink(precious, git_dir / "worktrees" / "link")
    removed = remove_entries(tmp_path / "repo", (".git", "worktrees"), {"ours"})
    assert removed.removed == ["link", "stray"] and removed.failed == []
    assert os.listdir(git_dir / "worktrees") == ["ours"]
    assert sorted(os.listdir(precious)) == ["file", "folder"]


def test_a_users_worktree_whose_folder_is_away_stays_registered(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """A worktree of the user's whose folder is missing when the job runs (on a disk not
    mounted now; not locked) is still git's to know of after a job that merged a task and
    removed its worktree: the job removes its own records by name, never by `git worktree
    prune` (which drops every record whose folder is missing)."""
    away, moved = tmp_path / "on-usb", tmp_path / "usb-unmounted"
    orch.git(repo, "worktree", "add", "-q", "-b", "usb", str(away))
    admin = next(iter(os.listdir(repo / ".git" / "worktrees")))
    away.rename(moved)  # the disk is unplugged
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", "echo A > a.txt")])

    done = bashgym_cli("orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin)

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["tasks"]["a"]["state"] == "merged"
    assert not (job.dir / "worktrees" / "a").exists()  # the job removed its worktree
    listed = worktrees(orch, repo)
    assert str(away) in listed, listed  # still registered (prunable, as git says)
    assert sorted(listed) == sorted([str(repo), str(away)])  # the job's records are gone
    assert sorted(os.listdir(repo / ".git" / "worktrees")) == [admin]
    moved.rename(away)  # plugged in again: the user's worktree works as before
    assert orch.git(away, "rev-parse", "--abbrev-ref", "HEAD") == "usb"
