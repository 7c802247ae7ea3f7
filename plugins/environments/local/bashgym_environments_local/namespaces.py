"""What `unshare` (util-linux) can do on this machine, tried once per process.

Two namespaces make `local` safer: a PID namespace with its own /proc (the command cannot see,
signal or read the environment of BashGym or any other process; everything it started is gone
when it ends), and, when asked, a network namespace with only a loopback (no network). Root
gets them directly; another user needs unprivileged user namespaces (`unshare -r`, which shows
the command uid 0 inside it).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

NET = ("--net",)
PID = ("--pid", "--fork", "--mount-proc", "--kill-child")


@functools.cache
def unshare_path() -> str | None:
    return shutil.which("unshare")


def _base() -> list[str]:
    path = unshare_path()
    assert path is not None
    return [path] if os.geteuid() == 0 else [path, "--map-root-user"]


@functools.cache
def try_unshare(flags: tuple[str, ...], argv: tuple[str, ...] = ("true",)) -> str | None:
    """None when `unshare FLAGS ARGV` works here (exit 0); else why not, in one line."""
    if unshare_path() is None:
        return "unshare (util-linux) is not installed"
    try:
        done = subprocess.run(
            [*_base(), *flags, "--", *argv], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare {' '.join(flags)} failed: {exc}"
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"unshare {' '.join(flags)} failed: {detail[0]}"
    return None


def unshare_prefix(flags: tuple[str, ...]) -> list[str]:
    """The argv prefix that runs a program in new namespaces FLAGS (check `try_unshare` first)."""
    return [*_base(), *flags, "--"]
