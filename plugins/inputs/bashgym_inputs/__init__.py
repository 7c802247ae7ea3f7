"""Finding the input files a user named: one file, a folder (searched recursively) or a glob.

Every file-reading source reads `path` the same way: `~` expanded, globs recursive, regular files
only, sorted. Folder contents are filtered (`pattern`, `accept`); a file named explicitly, or a
glob match, is taken as named, so an unsupported file fails loudly instead of vanishing.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path

from pydantic_core import PydanticCustomError

WILDCARDS = "*?["


def is_glob(path: str) -> bool:
    return any(ch in path for ch in WILDCARDS)


def glob_files(pattern: str) -> list[Path]:
    """Regular files matching `pattern` (`~` expanded, `**` recursive), sorted."""
    matches = glob.glob(os.path.expanduser(pattern), recursive=True)
    return sorted(p for p in map(Path, matches) if p.is_file())


def find_files(
    path: str, *, pattern: str = "*", accept: Callable[[Path], bool] | None = None
) -> list[Path]:
    """The files `path` names: glob matches, files under a folder matching `pattern` and
    `accept`, or the one file; empty when nothing matches (the caller words the error)."""
    if is_glob(path):
        return glob_files(path)
    target = Path(path).expanduser()
    if target.is_dir():
        return sorted(
            p for p in target.rglob(pattern) if p.is_file() and (accept is None or accept(p))
        )
    return [target] if target.is_file() else []


def missing_input(path: str) -> str | None:
    """Why `path`, as given, names nothing (None when it names something): checked when the
    run is resolved, so a typo is exit 2 before a run folder exists. Only existence: what is
    there is open()'s to judge, and it checks again (a file may vanish in between). Whatever
    open() would read passes: a path that exists, or a glob matching a file."""
    if Path(path).expanduser().exists():
        return None
    if not is_glob(path):
        return "does not exist"
    matches = glob.iglob(os.path.expanduser(path), recursive=True)
    return None if any(Path(p).is_file() for p in matches) else "nothing matches this glob"


def require_input(path: str) -> str:
    """`path` when it names something, else the options error saying why (for a source's
    `field_validator` on its path: the CLI shows `path: does not exist (got '…')`)."""
    if why := missing_input(path):
        raise PydanticCustomError("path_missing", why)
    return path
