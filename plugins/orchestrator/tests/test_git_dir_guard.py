"""Under `local` a task can write the user's git dir through its worktree's `.git` file (it
names `.git/worktrees/<x>`, whose `commondir` is the user's `.git`). A real job on a real
repository: a task plants a filter, an fsmonitor, hooks, attributes and a per-worktree config
there; BashGym's own git (commit, diff, merge, worktree removal) never runs the planted
program, and the user's `.git` is byte-identical after the job, each change noted and counted."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

RUN = ("-x", "shell", "-e", "local")


def guarded_files(git_dir: Path) -> dict[str, tuple[int, bytes]]:
    """What the job must leave as it was: config files, hooks/, info/ (mode and bytes)."""
    found: dict[str, tuple[int, bytes]] = {}
    for name in ("config", "config.worktree", "commondir"):
        path = git_dir / name
        if path.exists():
            found[name] = (path.lstat().st_mode, path.read_bytes())
    for folder in ("hooks", "info"):
        for path in sorted((git_dir / folder).rglob("*")):
            rel = str(path.relative_to(git_dir))
            mode = path.lstat().st_mode
            found[rel] = (mode, path.read_bytes() if stat.S_ISREG(mode) else b"")
    return found


def planting_command(mark: Path) -> str:
    """Shell run by the task in its worktree: follow `.git` back to the user's git dir and
    plant programs there (each would `touch` the marker when git runs it)."""
    program = f"touch {mark}; cat"
    return "; ".join(
        [
            "set -e",
            'admin=$(sed "s/^gitdir: //" .git)',
            'common=$(cd "$admin" && cd "$(cat commondir)" && pwd)',
            "echo '* filter=evil' > .gitattributes",
            f'printf \'[filter "evil"]\\n\\tclean = {program}\\n\\tsmudge = {program}\\n'
            f"\\trequired = false\\n[core]\\n\\tfsmonitor = touch {mark}\\n"
            '[extensions]\\n\\tworktreeConfig = true\\n\' >> "$common/config"',
            f'printf \'[filter "evil"]\\n\\tclean = {program}\\n\' > "$admin/config.worktree"',
            f"printf '#!/bin/sh\\ntouch {mark}\\n' > \"$common/hooks/pre-commit\"",
            'chmod +x "$common/hooks/pre-commit"',
            "echo '* filter=evil' >> \"$common/info/attributes\"",
            "echo planted > a.txt",
        ]
    )


@pytest.mark.slow
def test_a_task_cannot_make_bashgyms_git_run_its_program(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    mark = tmp_path / "planted-program-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")  # the user's own hook, which must come back
    hook.chmod(0o755)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    before = guarded_files(repo / ".git")
    tasks = [
        orch.shell_task("a", planting_command(mark)),
        orch.shell_task("b", "echo B > b.txt", deps=("a",)),  # git runs after a, on a's work
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f b.txt")

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--workers", "1"
    )

    assert not mark.exists(), "BashGym's git ran a program the task planted in the git dir"
    assert guarded_files(repo / ".git") == before  # the user's git dir, exactly as it was
    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    states = {t: s["state"] for t, s in result["tasks"].items()}
    assert states == {"a": "merged", "b": "merged"}, json.dumps(result["tasks"])
    notes = [e["text"] for e in orch.events(job) if e["type"] == "note"]
    planted = [n for n in notes if n.startswith("task a (attempt 1) changed")]
    assert len(planted) == 1, notes  # once per attempt, however often it was put back
    for name in ("config", "hooks/pre-commit", "info/attributes", "config.worktree"):
        assert name in planted[0], planted[0]
    assert "restored" in planted[0]
    summary = json.loads((job.dir / "run.json").read_text())
    restored = summary["counts"]["orchestrator.git_dir_restored"]
    assert restored >= 4, summary["counts"]  # each file put back, each time
    assert os.access(hook, os.X_OK) and hook.read_text() == "#!/bin/sh\nexit 0\n"


def test_swapped_folders_and_links_are_put_back(repo: Path, tmp_path: Path) -> None:
    """A hooks folder swapped for a link, a config swapped for a link, an added hook, a
    removed info file: each comes back as it was, and a second look finds nothing."""
    from bashgym_orchestrator.gitdir import GitDirGuard

    git_dir = repo / ".git"
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("*.log\n")
    before = guarded_files(git_dir)
    heard: list[list[str]] = []
    guard = GitDirGuard(git_dir, heard.append)
    elsewhere = tmp_path / "evil-hooks"
    elsewhere.mkdir()
    (elsewhere / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/x\n")
    os.rename(git_dir / "hooks", tmp_path / "old-hooks")
    os.symlink(elsewhere, git_dir / "hooks")
    (tmp_path / "evil-config").write_text("[core]\n\tfsmonitor = touch /tmp/x\n")
    os.replace(git_dir / "config", tmp_path / "saved-config")
    os.symlink(tmp_path / "evil-config", git_dir / "config")
    (git_dir / "info" / "exclude").unlink()
    (git_dir / "info" / "attributes").write_text("* filter=evil\n")

    restored = guard.restore()

    assert guarded_files(git_dir) == before
    assert {"config", "hooks", "info/exclude", "info/attributes"} <= set(restored)
    assert heard == [restored]
    assert guard.restore() == [] and len(heard) == 1
    assert (elsewhere / "pre-commit").exists()  # the link was removed, not followed


def test_only_an_environment_that_leaves_the_git_dir_writable_is_guarded(repo: Path) -> None:
    from bashgym_environments_bubblewrap.environment import BubblewrapEnvironment
    from bashgym_environments_bubblewrap.options import BubblewrapOptions
    from bashgym_environments_local.environment import LocalEnvironment
    from bashgym_orchestrator.gitdir import needs_guard

    git_dir = repo / ".git"
    assert needs_guard(LocalEnvironment(), None, git_dir)
    assert not needs_guard(BubblewrapEnvironment(), BubblewrapOptions(), git_dir)
    writable = BubblewrapOptions(writable=[str(repo)])  # the repository, .git and all
    assert needs_guard(BubblewrapEnvironment(), writable, git_dir)
