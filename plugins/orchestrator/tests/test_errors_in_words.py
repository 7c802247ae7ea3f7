"""Errors a user reads say what was found in plain words, with no class name, where they are
the plugin's own explained ones; a task that leaves a repository inside its own worktree (git
cannot commit it, or will not run beside it) has a failed attempt, retried like any other, not
an orchestrator error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bashgym_orchestrator.dispatch import _failure
from bashgym_orchestrator.gitdir import GitDirChanged
from bashgym_orchestrator.worktrees import GitError, in_words
from bashgym_procs import git

from bashgym.contracts import InputError
from bashgym.store import RunStore

RUN = ("-x", "shell", "-e", "local")


def test_a_task_that_nests_a_repository_is_retried_in_plain_words(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    marker = tmp_path / "tried-once"
    tasks = [
        # the first attempt leaves a repository with no commit inside its worktree (`git add`
        # refuses it), the retry does not
        orch.shell_task(
            "a",
            f"if [ ! -f {marker} ]; then touch {marker}; git init -q nested; "
            "echo n > nested/n.txt; fi; echo A > a.txt",
        ),
        # every attempt leaves one with a commit (git is not run beside it): failed once its
        # retries are spent
        orch.shell_task(
            "b",
            "git init -q inner && git -C inner -c user.name=t -c user.email=t@t commit -q "
            "--allow-empty -m x && echo B > b.txt",
        ),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "1"
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    a, b = result["tasks"]["a"], result["tasks"]["b"]
    assert (a["state"], a["attempts"]) == ("merged", 2), a
    assert orch.git(repo, "show", "bashgym/job/integration:a.txt") == "A"
    assert (b["state"], b["attempts"]) == ("failed", 2), b
    said = "what the task left in its worktree could not be committed: "
    assert b["reason"].startswith(said), b["reason"]
    assert "submodule 'inner' holds a repository" in b["reason"], b["reason"]
    status = bashgym_cli("orchestrate", "status", job.dir, "--json").stdout
    for text in (json.dumps(result), status, done.output):
        assert "UnsafeRepo" not in text and "orchestrator error" not in text, text
    store = RunStore(job.dir / "state.db")
    try:
        first = store.get("attempts", "a#1").result
        second = store.get("attempts", "a#2").result
    finally:
        store.close()
    assert first["status"] == "failed", first
    assert first["reason"].startswith(f"{said}git add failed: "), first["reason"]
    assert first["row"]["trace"]  # the worker's trace is kept
    assert f"Why it failed: {said}" in second["row"]["prompt"]  # the retry is told why


def test_explained_errors_read_without_a_class_name() -> None:
    unsafe = git.UnsafeRepo("/w/t: submodule 'x' holds a repository git would run with ...")
    assert in_words(unsafe) == str(unsafe)
    assert in_words(GitError("git merge failed: boom")) == "git merge failed: boom"
    assert in_words(GitDirChanged("/r/.git: no longer a folder")) == "/r/.git: no longer a folder"
    assert in_words(InputError("copy: '..' is not a path")) == "copy: '..' is not a path"
    assert _failure(GitError("git commit failed: disk full")) == "git commit failed: disk full"
    # an unexpected error keeps its type: it helps a bug report
    assert in_words(KeyError("x")) == "KeyError: 'x'"
    assert _failure(ValueError("bad")) == "orchestrator error: ValueError: bad"


def test_a_git_failure_not_the_tasks_is_not_blamed_on_it_nor_retried(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """Under `local` a task swaps its worktree's admin dir for a link: the repository's .git
    cannot be put back, so the orchestrator runs no git there. That failure is not what the
    task left in its worktree: the attempt is not retried (no worker paid again for it) and
    its reason says git failed after the worker ran, not that the task's files were
    uncommittable nor that the worker could not start."""
    swap = 'ad="$(git rev-parse --git-dir)"; mv "$ad" "$ad.moved"; ln -s "$ad.moved" "$ad"'
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", f"{swap}; echo A > a.txt")])

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "2"
    )

    assert done.exit_code == 1, done.output  # no task merged
    result = job.result()
    assert result is not None
    a = result["tasks"]["a"]
    assert (a["state"], a["attempts"]) == ("failed", 1), a
    assert a["reason"].startswith(
        "git failed after the worker ran: the repository's .git cannot be put back: "
    ), a["reason"]
    assert "no longer a folder" in a["reason"], a["reason"]
    store = RunStore(job.dir / "state.db")
    try:
        first = store.get("attempts", "a#1").result
    finally:
        store.close()
    assert first["status"] == "error" and first["row"]["trace"], first  # its trace kept
