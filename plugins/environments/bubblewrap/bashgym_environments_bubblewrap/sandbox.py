"""The `bwrap` command line for one session, and whether bwrap works here at all.

The layout, in bwrap's order (a later mount covers an earlier one):

    --ro-bind / /          the whole system, read-only (submounts too)
    --dev /dev --proc /proc   a minimal /dev; a /proc of the sandbox's own PID namespace
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
network is allowed, `--die-with-parent`, `--new-session` (no TIOCSTI into BashGym's terminal) and
`--cap-drop ALL`: run as root, bwrap keeps every capability unless told, and CAP_SYS_ADMIN would
let a command remount / read-write.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

INSTALL_HINT = "Debian package bubblewrap"

HIDDEN = (
    "~/.ssh", "~/.aws", "~/.azure", "~/.gnupg", "~/.kube", "~/.docker", "~/.config/gcloud",
    "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
    "~/.cache/huggingface/token", "~/.huggingface/token", "~/.claude", "~/.claude.json",
    "~/.codex", "/run/docker.sock", "/var/run/docker.sock",
)  # fmt: skip


def homes() -> list[str]:
    """The homes `~` stands for: $HOME and the account's home (they differ under sudo, in CI)."""
    found = [os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError):
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    return list(dict.fromkeys(h for h in found if h and h != "/"))


def hidden_paths(patterns: list[str]) -> list[Path]:
    """The existing real paths `patterns` name (`~` expanded to each home); links resolved, so
    hiding ~/.ssh hides what it points to."""
    out: list[Path] = []
    for pattern in patterns:
        names = [h + pattern[1:] for h in homes()] if pattern.startswith("~") else [pattern]
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
) -> list[str]:
    """bwrap and its options, up to the `--` before the program."""
    ws = str(workspace)
    argv = [
        bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
    ]  # fmt: skip
    if not network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
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


@functools.cache
def why_not(bwrap: str = "bwrap") -> str | None:
    """None when `bwrap` can make this sandbox here (tried once per process); else why not."""
    path = shutil.which(bwrap)
    if path is None:
        return f"{bwrap} is not installed ({INSTALL_HINT})"
    with tempfile.TemporaryDirectory(prefix="bashgym-bwrap-probe-") as probe:
        argv = bwrap_argv(path, Path(probe), network=False, hide=[])
        try:
            done = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{path} cannot run here: {exc}"
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"{path} cannot create namespaces here: {detail}"
    return None
