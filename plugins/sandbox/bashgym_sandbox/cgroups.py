"""A cgroup per session: a process limit that holds even for root, one memory limit for all of a
session's processes together, and a way to stop every one of them.

rlimits cannot do this: RLIMIT_NPROC is not enforced for root (so a fork bomb run as root takes
the machine down), and RLIMIT_AS is per process and counts reserved, not used, memory. A cgroup
with the `pids` and `memory` controllers bounds the whole tree of a command, counts what it
refused (`pids.events`, the OOM kills), and lists every process in it for the close, including
those that left the process group.

The cgroup is made under BashGym's own cgroup in each hierarchy, so limits above it (a
container's, a CI job's) still apply. A process joins by writing its pid into `cgroup.procs`
before it execs the command (the session's prelude does), so all it forks is counted.

Works with cgroup v1 (separate `pids` and `memory` hierarchies, as on this project's machines)
and with cgroup v2 where this process may give a child of its own cgroup those controllers (a
v2 cgroup holding processes cannot, so under systemd it usually fails). Where neither works, the
session says so in its notes and falls back to rlimits.

Why hand-written: the job is a few file reads and writes; the Python cgroup packages on PyPI
(cgroupspy, cgroup-utils) are v1-only and unmaintained.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = ("pids", "memory")
PREFIX = "bashgym-"


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's own cgroup is, in the hierarchy holding `controller`."""

    controller: str
    version: int
    own: Path  # this process's cgroup directory


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), text)


def hierarchies() -> dict[str, Hierarchy]:
    """Each controller of CONTROLLERS mounted here, with this process's cgroup in it."""
    try:
        own_lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return {}
    own_v1: dict[str, str] = {}
    own_v2: str | None = None
    for line in own_lines:
        ident, names, path = line.split(":", 2)
        if ident == "0" and not names:
            own_v2 = path
        for name in names.split(","):
            own_v1[name] = path
    found: dict[str, Hierarchy] = {}
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, kinds = left.split(), right.split()
        if len(fields) < 5 or len(kinds) < 3:
            continue
        root, point, fstype, options = fields[3], _unescape(fields[4]), kinds[0], kinds[2]
        if fstype == "cgroup":
            for name in set(options.split(",")) & set(CONTROLLERS):
                if name in own_v1 and name not in found:
                    own = _inside(Path(point), root, own_v1[name])
                    if own.is_dir():
                        found[name] = Hierarchy(name, 1, own)
        elif fstype == "cgroup2" and own_v2 is not None:
            own = _inside(Path(point), root, own_v2)
            try:
                available = (own / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            for name in set(available) & set(CONTROLLERS):
                found.setdefault(name, Hierarchy(name, 2, own))
    return found


def _inside(point: Path, root: str, path: str) -> Path:
    """The directory of cgroup `path` under a mount of the hierarchy's `root` at `point`."""
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root) :]
    return point / path.lstrip("/")


@dataclass
class Cage:
    """One session's cgroup(s): one per v1 hierarchy, or one v2 directory for both controllers."""

    dirs: dict[str, Path]  # controller -> its cgroup directory
    versions: dict[str, int]
    limits: dict[str, int] = field(default_factory=dict)  # controller -> limit set

    @property
    def unique_dirs(self) -> list[Path]:
        return sorted(set(self.dirs.values()))

    def join_files(self) -> list[Path]:
        """The `cgroup.procs` files a process writes its pid into to join the cage."""
        return [d / "cgroup.procs" for d in self.unique_dirs]

    def counters(self) -> tuple[int, int]:
        """(forks refused at the process limit, processes killed at the memory limit)."""
        refused = oom = 0
        if "pids" in self.dirs:
            refused = _field(self.dirs["pids"] / "pids.events", "max")
        if "memory" in self.dirs:
            name = "memory.oom_control" if self.versions["memory"] == 1 else "memory.events"
            oom = _field(self.dirs["memory"] / name, "oom_kill")
        return refused, oom

    def kill_all(self, wait_s: float = 5.0) -> None:
        """SIGKILL every process in the cage; forks are refused first, so none can slip out."""
        if "pids" in self.dirs:
            with contextlib.suppress(OSError):
                (self.dirs["pids"] / "pids.max").write_text("0")
        for d in self.unique_dirs:
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")  # v2 (Linux 5.14+): the kernel does it all
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            pids = [pid for d in self.unique_dirs for pid in _procs(d)]
            if not pids:
                return
            for pid in pids:  # a pid read here and reused before the kill is not plausible
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Stop what is left, then remove the cgroup directories."""
        self.kill_all()
        for d in self.unique_dirs:
            for _ in range(100):  # rmdir is refused (EBUSY) until the last task has exited
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _field(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _procs(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


_LIMIT_FILES = {
    (1, "pids"): ("pids.max",),
    (2, "pids"): ("pids.max",),
    (1, "memory"): ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    (2, "memory"): ("memory.max", "memory.swap.max"),
}


def _make(h: Hierarchy, name: str, value: int, made: dict[Path, bool]) -> Path:
    """The cgroup `name` under `h.own` (made once per directory), with `value` as its limit."""
    target = h.own / name
    if h.version == 2:  # a child only gets the files of controllers its parent hands down
        control = h.own / "cgroup.subtree_control"
        if h.controller not in control.read_text().split():
            control.write_text(f"+{h.controller}")
    created = target not in made
    if created:
        target.mkdir()
        made[target] = True
    try:
        first, *rest = _LIMIT_FILES[(h.version, h.controller)]
        (target / first).write_text(str(value))
    except OSError:
        if created:
            del made[target]
            target.rmdir()
        raise
    for extra in rest:  # swap: none, so the memory limit is the limit (absent without swap)
        if (target / extra).exists():
            with contextlib.suppress(OSError):
                (target / extra).write_text("0" if extra == "memory.swap.max" else str(value))
    return target


def _clean_stale(hs: dict[str, Hierarchy]) -> None:
    """Remove cages left by a BashGym process that is gone (killed before it could close)."""
    for h in hs.values():
        for d in h.own.glob(f"{PREFIX}*"):
            owner = d.name.removeprefix(PREFIX).split("-", 1)[0]
            if not owner.isdigit() or _alive(int(owner)):
                continue
            Cage({h.controller: d}, {h.controller: h.version}).remove()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_cage(processes: int | None, memory_mb: int | None) -> tuple[Cage | None, dict[str, str]]:
    """A new cage with these limits (None: that controller is not used), and for each
    controller it could not use, why not."""
    wanted = {"pids": processes, "memory": memory_mb and memory_mb * 1024 * 1024}
    wanted = {k: v for k, v in wanted.items() if v}
    if not wanted:
        return None, {}
    usable, why = usable_controllers()
    hs = {k: v for k, v in hierarchies().items() if k in usable}
    _clean_stale(hs)
    name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:10]}"
    cage = Cage({}, {})
    notes: dict[str, str] = {}
    made: dict[Path, bool] = {}
    for controller, value in wanted.items():
        h = hs.get(controller)
        if h is None:
            notes[controller] = why.get(controller, "not mounted")
            continue
        try:
            cage.dirs[controller] = _make(h, name, value, made)
        except OSError as exc:
            notes[controller] = f"cannot make a cgroup under {h.own}: {exc.strerror or exc}"
            continue
        cage.versions[controller] = h.version
        cage.limits[controller] = value
    if not cage.dirs:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        return None, notes
    return cage, notes


@functools.cache
def usable_controllers() -> tuple[frozenset[str], dict[str, str]]:
    """The controllers this process can give a child cgroup and move a process into (tried once,
    with a throwaway cgroup), and for the others why not."""
    hs = hierarchies()
    usable: set[str] = set()
    why = {c: "not mounted (no cgroup with this controller)" for c in CONTROLLERS if c not in hs}
    for controller, h in hs.items():
        probe = Cage({}, {})
        try:
            value = 64 if controller == "pids" else 64 * 1024 * 1024
            probe.dirs[controller] = _make(h, f"{PREFIX}{os.getpid()}-probe", value, {})
            probe.versions[controller] = h.version
            procs = probe.dirs[controller] / "cgroup.procs"
            joined = subprocess.run(
                ["/bin/sh", "-c", 'echo $$ > "$0"', str(procs)],
                capture_output=True,
                text=True,
                timeout=10,
            )
            if joined.returncode != 0:
                why[controller] = f"cannot join a new cgroup: {joined.stderr.strip()[:200]}"
            else:
                usable.add(controller)
        except (OSError, subprocess.SubprocessError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            why[controller] = f"cannot make a cgroup under {h.own}: {reason}"
        finally:
            probe.remove()
    return frozenset(usable), why
