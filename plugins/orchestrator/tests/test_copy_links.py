"""The spec's `copy` files go into each task's worktree without following a link an earlier task
committed into the integration branch: a copied name that is a link (`.env` -> a file of the
user's) and a copied name under a folder that is a link (`conf` -> a folder of the user's) are
replaced in the worktree, and the user's files they point at stay as they were."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bashgym_orchestrator.worktrees import copy_files

RUN = ("-x", "shell", "-e", "local")
GIT = "git -c user.name=t -c user.email=t@t"


def test_copy_files_follow_no_link_an_earlier_task_committed(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    (repo / ".env").write_text("SECRET=1\n")
    (repo / "conf").mkdir()
    (repo / "conf" / "a.env").write_text("A=1\n")
    victim = tmp_path / "user" / ".bashrc"  # the user's files, outside the repository and job
    victim.parent.mkdir()
    victim.write_text("precious\n")
    elsewhere = tmp_path / "user" / "config"
    elsewhere.mkdir()
    # a commits both links itself (`.env`, a copied name, would be kept out of its commit)
    links = (
        f"rm -rf .env conf && ln -s {victim} .env && ln -s {elsewhere} conf"
        f" && {GIT} add .env conf && {GIT} commit -qm links && echo A > a.txt"
    )
    tasks = [
        orch.shell_task("a", links),
        orch.shell_task("b", "cat .env conf/a.env > seen.txt", deps=("a",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, copy=[".env", "conf/a.env"])

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "0"
    )

    assert done.exit_code == 0, done.output
    # not written through the `.env` link, nothing made through the `conf` link
    assert (victim.read_text(), os.listdir(elsewhere)) == ("precious\n", [])
    result = job.result()
    assert result is not None
    assert {t: s["state"] for t, s in result["tasks"].items()} == {"a": "merged", "b": "merged"}
    # b saw the user's copies, in the worktree itself
    assert orch.git(repo, "show", "bashgym/job/b:seen.txt") == "SECRET=1\nA=1"
    # the copied files stay out of b's commit; the `.env` link is as the branch held it
    listed = orch.git(repo, "ls-tree", "-r", "--name-only", "bashgym/job/b").split()
    assert ".env" in listed and "conf/a.env" not in listed


def test_copied_folder_follows_no_link_inside_the_worktree(repo: Path, tmp_path: Path) -> None:
    """A copied folder merges into what the worktree holds there; a link in the worktree at one
    of its files or folders is replaced, never written through; the user's own links inside
    the folder are copied as links."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    away = tmp_path / "away"
    away.mkdir()
    config = repo / "config"
    (config / "deep").mkdir(parents=True)
    (config / "local.toml").write_text("x = 1\n")
    (config / "deep" / "k.txt").write_text("k\n")
    os.symlink("local.toml", config / "alias.toml")
    tree = tmp_path / "tree"
    (tree / "config").mkdir(parents=True)
    (tree / "config" / "kept.txt").write_text("the branch's\n")
    os.symlink(victim, tree / "config" / "local.toml")
    os.symlink(away, tree / "config" / "deep")

    assert copy_files(repo, tree, ["config"]) == ["config"]

    assert (victim.read_text(), os.listdir(away)) == ("precious\n", [])
    assert (tree / "config" / "local.toml").read_text() == "x = 1\n"
    assert not (tree / "config" / "local.toml").is_symlink()
    assert (tree / "config" / "deep" / "k.txt").read_text() == "k\n"
    assert not (tree / "config" / "deep").is_symlink()
    assert os.readlink(tree / "config" / "alias.toml") == "local.toml"
    assert (tree / "config" / "kept.txt").read_text() == "the branch's\n"
