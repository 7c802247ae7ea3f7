"""Names that come from data, made safe to use as a path component, a branch or an argument.

A task id, a file name or a branch name read from a source row is data: `/etc`, `../..`, `-rf`,
a NUL, a newline or 10,000 characters must never become a folder outside the run, an option to
a command or a ref git refuses. `safe_name` is the one mapping every plugin uses before a name
from data becomes any of those:

* a readable name stays as it is: 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a letter or a
  digit, with no `..`, not ending in `.` or `.lock` (so it is also a valid git branch name and
  never an option);
* anything else becomes `<slug>+<digest>`: the readable part of the name (at most 32
  characters, or `id` when none is left) and 32 hex characters of its SHA-256. `+` never occurs
  in a readable name, so a hashed name never equals a readable one, and 128 bits of digest keep
  two different names apart (no one can craft a second name that maps to the same one).

The mapping is a pure function of the name, so a resumed run finds the same folder again.
Case is kept: on a case-insensitive file system `A` and `a` would share a folder (BashGym runs
on Linux, where they do not).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

MAX_READABLE = 64
_READABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


def is_readable(name: str) -> bool:
    """Whether `name` is used as it is (see the module docstring)."""
    return (
        len(name) <= MAX_READABLE
        and _READABLE.fullmatch(name) is not None
        and ".." not in name
        and not name.endswith((".", ".lock"))
    )


def safe_name(name: str) -> str:
    """`name` itself when readable, else `<slug>+<sha256 prefix>`: a safe path component,
    branch name and argument, stable across runs, different for different names."""
    if is_readable(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    slug = _UNSAFE_RUN.sub("-", name)
    slug = re.sub(r"\.{2,}", ".", slug)[:32].lstrip("._-").rstrip("._-")
    return f"{slug or 'id'}+{digest}"


def child_path(root: Path | str, name: str) -> Path:
    """`root / safe_name(name)`, checked to be a direct child of `root` (a folder from data
    never lands anywhere else)."""
    component = safe_name(name)
    if component in (".", "..") or os.sep in component or "\0" in component:  # never: a guard
        raise ValueError(f"{name!r} does not map to a folder inside {root}")
    return Path(root) / component
