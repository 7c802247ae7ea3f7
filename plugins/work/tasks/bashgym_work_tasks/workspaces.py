"""Each task's workspace: made before it runs, and what the task changed read after.

Why the git CLI (through `bashgym_procs`) and not gitpython: one clone, async and killable
with the task, and one `status` need nothing more. The clone runs before the task, on the
user's repository, with the user's git settings (a private remote needs their credentials);
after the task, its workspace and everything in its `.git` are the task's, so `changed_files`
reads them only through `bashgym_procs.git` (its config reduced to plain data, no hook, filter,
fsmonitor or pager, no secret in git's environment), and lists plain files when that git
refuses the folder (a `.git` pointing elsewhere, a populated submodule, ...).

What the task changed, only: a workspace that is not a clone has its starting files (size and
mtime, which a copy keeps) recorded beside it, outside the task's reach, and only new, changed
or deleted files are listed after; the state an agent writes to its HOME (the workspace, in the
sandbox), such as Claude Code's `.claude.json` and `.claude/projects/`, is not the task's work.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import bashgym_procs as procs
from bashgym_procs import git

if TYPE_CHECKING:
    from bashgym_work_tasks.settings import WorkspaceSettings


async def prepare_workspace(path: Path, spec: WorkspaceSettings) -> None:
    """A fresh workspace at `path`: empty, a copy of `spec.template`, or a clone of `spec.repo`
    at `spec.ref`."""
    shutil.rmtree(path, ignore_errors=True)  # an attempt cut short starts clean
    if spec.repo:
        if spec.ref and spec.ref.startswith("-"):  # git checkout would read it as an option
            raise RuntimeError(f"workspace.ref {spec.ref!r} starts with '-': not a ref")
        path.parent.mkdir(parents=True, exist_ok=True)
        for argv in (
            ["git", "clone", "--quiet", "--", spec.repo, str(path)],
            *([["git", "-C", str(path), "checkout", "--quiet", spec.ref]] if spec.ref else []),
        ):
            done = await procs.run(argv, timeout=600)
            if not done.ok:
                raise RuntimeError(f"{' '.join(argv[:2])} failed ({done.reason}): {done.output}")
        return  # git tells a fresh clone's changes: it holds only what git tracks
    if spec.template:
        shutil.copytree(spec.template, path, symlinks=True)
    else:
        path.mkdir(parents=True)
    # A template's own untracked, ignored or uncommitted files (and its links) are no work of
    # the task, though git would list them: its state is recorded here, `.git` or not.
    _start_file(path).write_text(json.dumps(_stats(path)), encoding="utf-8")


async def changed_files(path: Path, limit: int = 200) -> list[str]:
    """What the task changed in its workspace (new, changed, deleted paths): git's word in a
    clone, else the files that differ from those recorded at the start; an agent's HOME state
    left out."""
    start = _start_file(path)
    try:
        before = json.loads(start.read_text(encoding="utf-8")) if start.is_file() else None
    except ValueError:  # a torn record (a kill while writing): every file, as without one
        before = None
    start.unlink(missing_ok=True)
    found: list[str] | None = None
    if before is None and os.path.lexists(path / ".git"):
        with contextlib.suppress(git.UnsafeRepo):  # git will not run there: files instead
            found = await git.changed_paths(git.Repo.untrusted(path))
    if found is None:
        after = _stats(path)
        before = before or {}
        found = sorted(p for p in after.keys() | before.keys() if after.get(p) != before.get(p))
    return [p for p in found if not _agent_home_state(p)][:limit]


# What agents write to HOME, which the sandbox sets to the workspace (fnmatch patterns).
# Claude Code: its settings file and backups, and the session state under `.claude/`; a task
# that edits `.claude/settings.json` or `.claude/commands/` still shows.
AGENT_HOME_STATE = (
    ".claude.json",
    ".claude.json.backup*",
    ".claude/.credentials.json",
    ".claude/history.jsonl",
    *(f".claude/{d}/*" for d in (
        "projects", "todos", "shell-snapshots", "statsig", "session-env", "file-history",
        "debug", "ide", "plans", "telemetry", "cache", "backups",
    )),
)  # fmt: skip


def _agent_home_state(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in AGENT_HOME_STATE)


def _start_file(workspace: Path) -> Path:
    """Beside the workspace, not in it: the task cannot rewrite its own starting point."""
    return workspace.with_name(workspace.name + ".start.json")


def _stats(root: Path) -> dict[str, list[int]]:
    """Each file's (mode: its type and permissions, size, mtime in ns), by path relative to
    `root`; links not followed (a link's own, so what it points at, inside or out, is not
    read)."""
    out: dict[str, list[int]] = {}
    for rel in _plain_files(root):
        st = os.lstat(root / rel)
        out[rel] = [st.st_mode, st.st_size, st.st_mtime_ns]
    return out


def _plain_files(root: Path) -> list[str]:
    """Every file (or link, not followed) under `root`, sorted; `.git` folders not entered."""
    if os.path.islink(root) or not root.is_dir():  # a workspace swapped for a link: not read
        return []
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):  # os.walk enters no linked folder
        dirs[:] = [d for d in dirs if d != ".git"]
        found += (Path(folder, name).relative_to(root) for name in files)
        found += (Path(folder, d).relative_to(root) for d in dirs if Path(folder, d).is_symlink())
    return [p.as_posix() for p in sorted(found)]
