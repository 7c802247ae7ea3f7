"""What a `local` command may not do to BashGym or to the host, beyond the limits.

Found by attack (issue 20): a command run as root kept every capability, so it could
`umount /proc` in its namespace and read BashGym's environment (API keys) through the host's
/proc, mount, set the hostname, write sysctls (`kernel.core_pattern` runs a program as host
root), move itself out of its cgroup (and so out of its process and memory limits), and push
keystrokes into the terminal BashGym runs in (TIOCSTI on the terminal's /dev/pts path, which
CAP_SYS_ADMIN allows on any terminal). Four measures, each one job:

- `setpriv` (util-linux, the package `unshare` comes from) starts the program with no
  capabilities at all (bounding, inheritable and ambient sets cleared, so even uid 0 gets none
  at exec) and no_new_privs (setuid programs such as sudo give nothing). Why a program and not
  a Python binding: the session builds an argv that any caller execs (workers through `argv`),
  so the drop must be a step of that argv; the prctl bindings on PyPI (python-prctl, pyprctl)
  are unmaintained since 2020/2021, and setpriv is maintained with the kernel interfaces.
- in the command's own mount namespace (when it has one), /proc and /sys are remounted
  read-only and an empty read-only tmpfs covers /sys/fs/cgroup, before the capabilities go: a
  root command cannot write sysctls, /proc/sysrq-trigger or cgroup files, and without
  CAP_SYS_ADMIN it cannot undo any of it.
- the prelude refuses to run a program that still has a controlling terminal (a caller that
  did not start it in a new session): no TIOCSTI through /dev/tty.
- BashGym's own process is made non-dumpable (`PR_SET_DUMPABLE` 0, as ssh-agent and gpg-agent
  do): a process of the same user without CAP_SYS_PTRACE can no longer read its
  /proc/PID/environ (which shows the environment block BashGym was started with, keys
  included, whatever was deleted from `os.environ` since) nor its memory. This is the one
  protection that holds for a non-root user without namespaces. Side effects: no core dumps of
  BashGym, and debuggers/py-spy need root to attach; children are not affected (exec resets it).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from bashgym_sandbox import PRELUDE_FAILED as REFUSED
from bashgym_sandbox import bash_path

from bashgym_environments_local.namespaces import PID, unshare_prefix

PR_SET_DUMPABLE = 4

# Clearing the bounding set needs CAP_SETPCAP: root, or root of a user namespace. A plain user
# holds no capability to drop, and no_new_privs keeps it from gaining any at exec (file caps,
# setuid).
NO_CAPS = ("--no-new-privs", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all")
NO_NEW_PRIVS = ("--no-new-privs",)

NO_TERMINAL = (
    "if { : </dev/tty; } 2>/dev/null; then echo 'bashgym: refused: this program has a "
    "controlling terminal (a command could type into it with TIOCSTI); start it in a new "
    f"session (bashgym_procs.spawn, start_new_session=True)' >&2; exit {REFUSED}; fi"
)

# Run as root of the command's new mount namespace (root, or root of a user namespace), before
# the capabilities are dropped. /proc is the namespace's own (unshare --mount-proc).
READ_ONLY = (
    "mount -o remount,bind,ro /proc && mount -o remount,bind,ro /sys && "
    "{ ! test -d /sys/fs/cgroup || mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=555 "
    "bashgym-no-cgroups /sys/fs/cgroup; } || "
    f"{{ echo 'bashgym: cannot make /proc and /sys read-only' >&2; exit {REFUSED}; }}"
)


@functools.cache
def setpriv_path() -> str | None:
    return shutil.which("setpriv")


def drop_privileges(argv: list[str], flags: tuple[str, ...] = NO_CAPS) -> list[str]:
    """`argv` started through setpriv with `flags` (check it works here first)."""
    path = setpriv_path()
    assert path is not None
    return [path, *flags, "--", *argv]


@functools.cache
def try_run(argv: tuple[str, ...]) -> str | None:
    """None when `argv` exits 0 here (a probe, run once per process); else why not, one line."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{argv[0]} failed: {exc}"
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return detail[0]
    return None


@functools.cache
def protect_parent() -> str | None:
    """Make this (BashGym's) process non-dumpable, once; None when done, else why not."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return f"prctl(PR_SET_DUMPABLE) failed: errno {ctypes.get_errno()}"
    return None


@dataclass
class Lockdown:
    """What this machine lets local take away from a command (see `lockdown`)."""

    setpriv: tuple[str, ...] | None = None  # the setpriv flags, or None: nothing dropped
    read_only: bool = False  # /proc and /sys read-only, cgroups hidden (in its mount namespace)
    parent: str | None = None  # why BashGym could not be made non-dumpable, or None
    notes: list[str] = field(default_factory=list)

    def describe(self, *, root: bool, pid: bool) -> list[str]:
        if self.setpriv == NO_CAPS:
            privileges = (
                "no capabilities and no_new_privs (setpriv), even as root: no mount or umount, "
                "no hostname, no TIOCSTI into a terminal that is not its own, no setuid gain"
            )
        elif self.setpriv == NO_NEW_PRIVS:
            privileges = "BashGym's user, no capabilities; no_new_privs (no setuid gain)"
        else:
            privileges = "NOT dropped: " + (
                "every capability of root" if root else "no no_new_privs (setuid programs work)"
            )
        kernel = (
            "/proc and /sys read-only, /sys/fs/cgroup hidden: no sysctl or cgroup writes"
            if self.read_only
            else (
                "NOT protected: a root command can write sysctls and cgroup files"
                if root
                else "written only as BashGym's user"
            )
        )
        seen = "invisible (PID namespace), and " if pid else ""
        secrets = (
            f"BashGym's process is {seen}not dumpable: no command reads its environment "
            "block (/proc/PID/environ, whose keys stay there even when deleted from "
            "os.environ) or its memory"
            if self.parent is None
            else f"BashGym's environment block is readable by its user's processes ({self.parent})"
        )
        return [
            f"privileges: {privileges}",
            f"kernel: {kernel}",
            f"secrets: {secrets}",
            "terminal: none: a command runs in a new session; a program that still has a "
            "controlling terminal is refused (exit 125)",
        ]


def probe(flags: tuple[str, ...]) -> Lockdown:
    """Probe (once per process) what can be dropped here: capabilities through setpriv (as
    root, or as root of the user namespace `unshare` makes), the read-only mounts where the
    command has its own mount namespace; and make BashGym non-dumpable."""
    lock = Lockdown(parent=protect_parent())
    if lock.parent is not None:
        lock.notes.append(f"secrets: BashGym could not be made non-dumpable ({lock.parent})")
    inside = tuple(unshare_prefix(flags)) if flags else ()
    if setpriv_path() is None:
        lock.notes.append("privileges: NOT dropped (setpriv, util-linux, is not installed)")
    else:
        wanted = NO_CAPS if flags or os.geteuid() == 0 else NO_NEW_PRIVS
        why = try_run((*inside, *drop_privileges(["true"], wanted)))
        if why is None:
            lock.setpriv = wanted
        else:
            lock.notes.append(f"privileges: NOT dropped (setpriv failed: {why})")
    if PID[0] in flags:
        why = try_run((*inside, bash_path(), "-c", READ_ONLY))
        lock.read_only = why is None
        if why is not None:
            lock.notes.append(f"kernel: /proc and /sys stay writable ({why})")
    elif os.geteuid() == 0:
        lock.notes.append("kernel: NOT protected (no mount namespace): a root command can "
                          "write sysctls and leave its cgroup")  # fmt: skip
    return lock


def wrap(argv: list[str], flags: tuple[str, ...], lock: Lockdown) -> list[str]:
    """unshare FLAGS bash-init [READ_ONLY] setpriv ... ARGV, each part where it works."""
    if lock.setpriv is not None:
        argv = drop_privileges(argv, lock.setpriv)
    if not flags:
        return argv
    if PID[0] in flags:  # bash as the namespace's init, waiting for the program, so a program
        # killed by a signal ends as 128+N (unshare cannot re-raise SIGKILL itself)
        init = f"{READ_ONLY}\n" if lock.read_only else ""
        argv = [bash_path(), "-c", init + '"$@"; exit $?', "bashgym-init", *argv]
    return [*unshare_prefix(flags), *argv]
