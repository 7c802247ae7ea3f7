"""Each task's workspace: made before it runs, and what the task changed read after.

Why the git CLI (through `bashgym_procs`) and not gitpython: one clone, async and killable
with the task, and one `status --porcelain` need nothing more.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import bashgym_procs as procs

if TYPE_CHECKING:
    from bashgym.runspec import WorkspaceSpec


async def prepare_workspace(path: Path, spec: WorkspaceSpec) -> None:
    """A fresh workspace at `path`: empty, a copy of `spec.template`, or a clone of `spec.repo`
    at `spec.ref`."""
    shutil.rmtree(path, ignore_errors=True)  # an attempt cut short starts clean
    if spec.repo:
        path.parent.mkdir(parents=True, exist_ok=True)
        for argv in (
            ["git", "clone", "--quiet", spec.repo, str(path)],
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
    if (path / ".git").is_dir():
        done = await procs.run(["git", "-C", str(path), "status", "--porcelain"], timeout=60)
        return [line[3:] for line in done.output.splitlines()][:limit]
    files = (p.relative_to(path).as_posix() for p in sorted(path.rglob("*")) if p.is_file())
    return list(itertools.islice(files, limit))
