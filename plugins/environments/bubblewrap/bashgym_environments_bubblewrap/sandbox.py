"""The `bwrap` command line for one session, and whether bwrap works here at all.

The layout, in bwrap's order (a later mount covers an earlier one):

    --ro-bind / /          the whole system, read-only (submounts too)
    --dev /dev --proc /proc   a minimal /dev; a /proc of the sandbox's own PID namespace
    --ro-bind /proc/sys ...   the kernel's writable interfaces read-only (PROC_READ_ONLY:
                           sysctls, sysrq-trigger, irq, bus, fs) and its memory, key and timer
                           views empty (PROC_MASKED, /sys/firmware), as Docker's default
                           masked and read-only paths; bwrap does the same for irq and bus
                           itself but skips /proc/sys when run as root (it tests W_OK after
                           dropping privileges), which left every global sysctl writable
    --bind TMP /tmp        the session's own /tmp: a folder made for it, kept across its
                           commands, removed at close (not the host's /tmp)
    --tmpfs /run           (without network) no host daemon's sockets: docker, dbus, systemd
    --ro-bind R R          the Python that runs BashGym (its prefixes, its executable's folder,
                           every sys.path folder: editable plugins) where it lives under /tmp or
                           /run, which the mounts above replace: a checkout and venv in /tmp (as
                           CI clones often are) must still run its own interpreter and agents
    --tmpfs / --ro-bind /dev/null   over each hidden path (credentials of common tools; the
                           /dev/null cannot even be opened: binds are nodev)
    --bind P P             each folder of the `writable` option
    --bind WS WS           the workspace, writable, at its own path, so a path the host's file
                           operations use is the same inside (also when WS is under /tmp)

with `--unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try`, `--unshare-net` unless
network is allowed, `--die-with-parent`, `--new-session` (no TIOCSTI into BashGym's terminal),
`--cap-drop ALL` (run as root, bwrap keeps every capability unless told, and CAP_SYS_ADMIN would
let a command remount / read-write), `--unshare-user --disable-userns` where this machine allows
them (the bounding set is emptied too, and no nested user namespace can hand capabilities back;
`userns_flags` finds out once), and `--seccomp FD` with the filter of `seccomp` where
libseccomp is installed.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bashgym_environments_bubblewrap import seccomp

INSTALL_HINT = "Debian package bubblewrap"

HIDDEN = (
    # the system's password hashes and host keys (readable when BashGym runs as root)
    "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/security/opasswd",
    "/etc/ssh/ssh_host_*_key",
    # credentials and histories of common tools, in each home (HOME inside is the workspace,
    # so a tool never needs the real ones)
    "~/.ssh", "~/.aws", "~/.azure", "~/.gnupg", "~/.kube", "~/.docker", "~/.config",
    "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc", "~/.cache/huggingface/token",
    "~/.huggingface/token", "~/.claude", "~/.claude.json", "~/.codex", "~/.password-store",
    "~/.local/share/keyrings", "~/.vault-token", "~/.bash_history", "~/.zsh_history",
    "~/.python_history", "/run/docker.sock", "/var/run/docker.sock",
)  # fmt: skip

# kernel interfaces under /proc a task has no business writing: shown read-only (Docker's
# ReadonlyPaths); and views of kernel memory, key rings and timers: hidden (its MaskedPaths)
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
PROC_MASKED = (
    "/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
    "/proc/timer_stats", "/proc/acpi", "/proc/scsi", "/proc/asound", "/sys/firmware",
    "/sys/devices/virtual/powercap",
)  # fmt: skip


def homes() -> list[str]:
    """The homes `~` stands for: $HOME and the account's home (they differ under sudo, in CI)."""
    found = [os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError):
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    return list(dict.fromkeys(h for h in found if h and h != "/"))


def hidden_paths(patterns: list[str]) -> list[Path]:
    """The existing real paths `patterns` name (`~` expanded to each home, shell globs as
    `glob` finds them); links resolved, so hiding ~/.ssh hides what it points to."""
    out: list[Path] = []
    for pattern in patterns:
        names = [h + pattern[1:] for h in homes()] if pattern.startswith("~") else [pattern]
        if glob.has_magic(pattern):
            names = [found for name in names for found in sorted(glob.glob(name))]
        for name in names:
            if os.path.lexists(name):
                real = Path(os.path.realpath(name))
                if real != Path("/") and real not in out:
                    out.append(real)
    return out


def runtime_paths(covered: Sequence[str] = ("/tmp", "/run")) -> list[Path]:
    """The folders of the running Python (prefixes, the executable's folder, sys.path entries,
    the folders its loaded packages came from) that lie under a `covered` mount point, outermost
    only: the sandbox shows them read-only again, as it shows the rest of the system."""
    found: set[Path] = set()
    # editable installs map packages to their source folders through an import hook, not
    # sys.path: the folder holding each loaded top-level package counts too
    loaded = [
        os.path.dirname(os.path.dirname(f) if f.endswith("__init__.py") else f)
        for name, module in list(sys.modules.items())
        if "." not in name and isinstance(f := getattr(module, "__file__", None) or "", str) and f
    ]
    executable = sys.executable
    candidates = (sys.prefix, sys.exec_prefix, sys.base_prefix, os.path.dirname(executable),
                  os.path.dirname(os.path.realpath(executable)), *sys.path, *loaded)  # fmt: skip
    for name in dict.fromkeys(candidates):  # most packages share a folder: look at each once
        if not name or not os.path.isdir(name):
            continue
        real = Path(os.path.realpath(name))
        if any(real.is_relative_to(c) and real != Path(c) for c in covered):
            found.add(real)
    return sorted(p for p in found if not any(p != q and p.is_relative_to(q) for q in found))


def bwrap_argv(
    bwrap: str,
    workspace: Path,
    *,
    network: bool,
    hide: list[Path],
    writable: Sequence[Path] = (),
    tmp: Path | None = None,
    userns: Sequence[str] = (),
    seccomp_fd: int | None = None,
) -> list[str]:
    """bwrap and its options, up to the `--` before the program. `userns`: the flags
    `userns_flags` found to work; `seccomp_fd`: a descriptor bwrap reads the filter from."""
    ws = str(workspace)
    argv = [
        bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL", *userns,
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
    ]  # fmt: skip
    if not network:
        argv.append("--unshare-net")
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += kernel_interfaces()
    argv += ["--tmpfs", "/tmp"] if tmp is None else ["--bind", str(tmp), "/tmp"]
    if not network:
        argv += ["--tmpfs", "/run"]
    for path in runtime_paths(("/tmp",) if network else ("/tmp", "/run")):
        argv += ["--ro-bind", str(path), str(path)]
    for path in hide:
        argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    argv += ["--bind", ws, ws, "--chdir", ws, "--"]
    return argv


def kernel_interfaces() -> list[str]:
    """The bwrap options that make PROC_READ_ONLY read-only and PROC_MASKED empty; only for
    what this kernel has (a bind needs its mount point). /proc/sys comes from the host's /proc
    (bwrap binds from outside): the sysctls of the sandbox's own network namespace read as the
    host's, read-only."""
    argv: list[str] = []
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for path in PROC_MASKED:
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    return argv


def _tries(argv: list[str]) -> subprocess.CompletedProcess[str] | str:
    try:
        return subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)


@functools.cache
def userns_flags(bwrap: str = "bwrap") -> tuple[tuple[str, ...], str]:
    """The user-namespace flags bwrap can use here (tried once per process), and a line saying
    what they give: `--unshare-user --disable-userns` (an empty bounding set, no nested
    namespace), `--unshare-user`, or none (a container that forbids user namespaces: the
    capabilities are still dropped, the bounding set stays)."""
    path = shutil.which(bwrap) or bwrap
    with tempfile.TemporaryDirectory(prefix="bashgym-bwrap-probe-") as probe:
        for flags in (("--unshare-user", "--disable-userns"), ("--unshare-user",)):
            done = _tries(bwrap_argv(path, Path(probe), network=False, hide=[], userns=flags))
            if not isinstance(done, str) and done.returncode == 0:
                what = "and no nested one" if "--disable-userns" in flags else "(nested allowed)"
                return flags, f"own user namespace {what}"
    return (), "NO user namespace (bwrap cannot make one here): the bounding set is kept"


SECCOMP_FD = 3


def with_filter(filter_path: Path | None, argv: list[str], *, no_growth: bool = False) -> list[str]:
    """`argv` (bwrap's) started by a shell that first opens the filter file on SECCOMP_FD
    (bwrap reads and closes it; BashGym's children inherit no descriptor but 0-2, so this is
    how the filter gets through) and, with `no_growth`, sets RLIMIT_FSIZE to 0: no file can
    grow, removing and reading still work (a session over its disk limit)."""
    if filter_path is None and not no_growth:
        return argv
    script = "ulimit -f 0 || exit 125; " if no_growth else ""
    script += 'exec "$@"' + (f' {SECCOMP_FD}< "$0"' if filter_path is not None else "")
    shell = shutil.which("bash") or "/bin/bash"
    return [shell, "-c", script, str(filter_path or "bashgym-sandbox"), *argv]


@functools.cache
def seccomp_filter(bwrap: str = "bwrap") -> tuple[bytes | None, str]:
    """The compiled filter if bwrap can load it here (tried once per process), and a line
    saying what the sandbox gets (or why no filter)."""
    bpf, what = seccomp.compiled()
    if bpf is None:
        return None, what
    path = shutil.which(bwrap) or bwrap
    with tempfile.TemporaryDirectory(prefix="bashgym-bwrap-probe-") as probe:
        filter_path = Path(probe) / "seccomp.bpf"
        filter_path.write_bytes(bpf)
        argv = bwrap_argv(path, Path(probe), network=False, hide=[], seccomp_fd=SECCOMP_FD)
        done = _tries(with_filter(filter_path, argv))
    if isinstance(done, str) or done.returncode != 0:
        detail = done if isinstance(done, str) else (done.stderr.strip() or "refused")
        return None, f"NO seccomp filter: bwrap could not load it here ({detail})"
    return bpf, what


@functools.cache
def why_not(bwrap: str = "bwrap") -> str | None:
    """None when `bwrap` can make this sandbox here (tried once per process); else why not."""
    path = shutil.which(bwrap)
    if path is None:
        return f"{bwrap} is not installed ({INSTALL_HINT})"
    with tempfile.TemporaryDirectory(prefix="bashgym-bwrap-probe-") as probe:
        done = _tries(bwrap_argv(path, Path(probe), network=False, hide=[]))
        if isinstance(done, str):
            return f"{path} cannot run here: {done}"
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"{path} cannot create namespaces here: {detail}"
    return None
