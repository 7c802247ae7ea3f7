"""Each task's workspace: made before it runs, and what the task changed read after.

Why the git CLI (through `bashgym_procs`) and not gitpython: one clone, async and killable
with the task, and one `status` need nothing more. The clone runs before the task, on the
user's repository, with the user's git settings (a private remote needs their credentials);
after the task, its workspace and everything in its `.git` are the task's, so `changed_files`
reads them only through `bashgym_procs.git` (its config reduced to plain data, no hook, filter,
fsmonitor or pager, no secret in git's environment), and lists plain files when that git
refuses the folder (a `.git` pointing elsewhere, a populated submodule, ...).
"""

from __future__ import annotations

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
    elif spec.template:
        shutil.copytree(spec.template, path, symlinks=True)
    else:
        path.mkdir(parents=True)


async def changed_files(path: Path, limit: int = 200) -> list[str]:
    """What the task left in its workspace: git's changed paths in a clone, else every file."""
    if os.path.lexists(path / ".git"):
        try:
            return (await git.changed_paths(git.Repo.untrusted(path)))[:limit]
        except git.UnsafeRepo:
            pass  # git will not run there: say what files are there instead
    return _plain_files(path)[:limit]


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
