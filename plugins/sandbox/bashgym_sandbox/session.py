"""A session that runs an agent's commands under limits: the base of `local` and `bubblewrap`.

Every program a session starts, a one-off command (`run`) or a long-lived worker a caller starts
itself (`argv`), goes through the same prelude, so both get the same isolation and limits:

    bash -c PRELUDE bashgym-sandbox  WRAP...  PROGRAM...

The prelude changes into the workspace, joins the session's cgroup (process and memory limits
for the whole session, see `cgroups`), sets the per-process rlimits (CPU seconds, file size;
address space and process count where no cgroup holds them) and execs the rest. WRAP is what a
subclass adds around the program: `unshare` for local, `bwrap` for bubblewrap. The environment
is an allow-list (`envvars`). Output, timeouts and stopping a process group are
`bashgym_procs.run`'s; the session adds to its reason what the cgroup saw (forks refused at the
process limit, processes killed at the memory limit).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shlex
import shutil
import signal
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bashgym_procs import run as run_process

from bashgym.contracts import EnvironmentSession, InputError
from bashgym.records import Completed
from bashgym_sandbox.cgroups import Cage, make_cage
from bashgym_sandbox.envvars import ALLOWED, sandbox_env
from bashgym_sandbox.options import SandboxOptions
from bashgym_sandbox.workspace import Workspace

CPU_GRACE_S = 5  # seconds between SIGXCPU (soft CPU limit) and SIGKILL (hard)
PRELUDE_FAILED = 125  # the prelude could not set up the sandbox (said on stderr)
_SIGNAL_EXITS = {
    128 + signal.SIGXCPU: "a process reached the CPU time limit",
    128 + signal.SIGXFSZ: "a process reached the file size limit",
}


def workspace_folder(workspace: Path) -> Workspace:
    """The session's Workspace; a missing folder, a file, or / itself is refused."""
    path = Path(workspace)
    if not path.is_dir():
        raise InputError(f"workspace {path} is not a folder")
    ws = Workspace(path)
    if ws.root == Path("/"):
        raise InputError("the workspace cannot be / (it is the one folder commands may change)")
    return ws


def bash_path() -> str:
    return shutil.which("bash") or "/bin/bash"


class SandboxSession(EnvironmentSession):
    """Commands and workers under the options' limits; subclasses put isolation around them by
    overriding `wrap` (and say what it holds in `describe`)."""

    name = "sandbox"

    def __init__(self, workspace: Workspace, options: SandboxOptions, *, tmpdir: str) -> None:
        super().__init__(workspace)
        self.options = options
        self.notes: list[str] = []  # what holds less than asked, one line each
        self.cage: Cage | None
        self.cage, why_no_cgroup = make_cage(options.processes, options.memory_mb)
        self.env = sandbox_env(
            os.environ,
            home=str(workspace.root),
            tmpdir=tmpdir,
            pass_env=options.pass_env,
            extra=options.env,
        )
        self._limits = self._rlimits()
        self.notes += self._limit_notes(why_no_cgroup)

    # -- what subclasses change ---------------------------------------------------------------

    def wrap(self, argv: list[str]) -> list[str]:
        """The isolation around `argv` (namespaces, a sandbox binary); default: none."""
        return argv

    def guards(self) -> list[str]:
        """Shell lines the prelude runs first, each exiting PRELUDE_FAILED to refuse the
        program (e.g. local refuses one that still has a controlling terminal); default none."""
        return []

    def describe(self) -> list[str]:
        """What this session holds, one line per concern (subclasses add their own)."""
        o, dirs = self.options, (self.cage.dirs if self.cage else {})
        if "pids" in dirs:
            processes = f"at most {o.processes} at once in the session (pids cgroup)"
        elif "nproc" in self._limits:
            processes = f"at most {o.processes} of this user's, all counted (RLIMIT_NPROC)"
        elif o.processes:
            processes = "NOT limited (no pids cgroup here; RLIMIT_NPROC does not hold for root)"
        else:
            processes = "not limited"
        if "memory" in dirs:
            memory = f"{o.memory_mb} MB for all the session's processes together (memory cgroup)"
        elif "as_kb" in self._limits:
            memory = f"{o.memory_mb} MB of address space per process (RLIMIT_AS)"
        else:
            memory = "not limited"
        per = [f"{o.cpu_s} CPU s" if o.cpu_s else "", f"{o.file_size_mb} MB files"]
        per = [p for p in per if p and not p.startswith("None")]
        return [
            f"time: a command is stopped after {o.timeout_s:g} s (or as its caller says)",
            f"processes: {processes}",
            f"memory: {memory}",
            "per process: " + (", ".join(per) or "no rlimits"),
            f"output: {o.output_limit} bytes kept (head and tail); a command writing over "
            f"{100 * o.output_limit} is stopped",
            f"environment: only {', '.join([*ALLOWED, *o.pass_env])} pass; HOME is the workspace",
        ]

    # -- the contract -------------------------------------------------------------------------

    def argv(self, argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return [*self._prelude(), *self.wrap(list(argv))], dict(self.env)

    async def run(self, command: str, *, timeout: float | None = None) -> Completed:
        argv, env = self.argv([bash_path(), "-c", command])
        before = self.cage.counters() if self.cage else (0, 0)
        done = await run_process(
            argv,
            cwd=self.workspace.root,
            env=env,
            timeout=self.options.timeout_s if timeout is None else timeout,
            output_limit=self.options.output_limit,
        )
        return self._explain(done, before)

    async def aclose(self) -> None:
        """Stop every process still in the session's cgroup and remove it."""
        if self.cage is not None:
            await asyncio.to_thread(self.cage.remove)
            self.cage = None

    # -- inside -------------------------------------------------------------------------------

    def _rlimits(self) -> dict[str, int]:
        """The rlimits the prelude sets, in `ulimit` units, each capped at the hard limit this
        process already has (asking for more would fail)."""
        o, dirs = self.options, (self.cage.dirs if self.cage else {})
        wanted = {
            "cpu": (o.cpu_s and o.cpu_s + CPU_GRACE_S, resource.RLIMIT_CPU, 1),
            "fsize_kb": (o.file_size_mb and o.file_size_mb * 1024, resource.RLIMIT_FSIZE, 1024),
        }
        if "memory" not in dirs and o.memory_mb:
            wanted["as_kb"] = (o.memory_mb * 1024, resource.RLIMIT_AS, 1024)
        if "pids" not in dirs and o.processes and os.geteuid() != 0:
            wanted["nproc"] = (o.processes, resource.RLIMIT_NPROC, 1)
        limits: dict[str, int] = {}
        for key, (value, which, unit) in wanted.items():
            if not value:
                continue
            hard = resource.getrlimit(which)[1]
            limits[key] = value if hard == resource.RLIM_INFINITY else min(value, hard // unit)
        return limits

    def _limit_notes(self, why: dict[str, str]) -> list[str]:
        o, dirs = self.options, (self.cage.dirs if self.cage else {})
        notes = []
        if o.processes and "pids" not in dirs:
            how = "RLIMIT_NPROC instead" if "nproc" in self._limits else "NOT limited (root)"
            notes.append(f"processes: {how}; no pids cgroup ({why.get('pids', 'not mounted')})")
        if o.memory_mb and "memory" not in dirs:
            notes.append(
                "memory: RLIMIT_AS per process instead; no memory cgroup "
                f"({why.get('memory', 'not mounted')})"
            )
        return notes

    def _prelude(self) -> list[str]:
        q = shlex.quote
        fail = f"exit {PRELUDE_FAILED}"
        lines = [*self.guards(), f"cd -- {q(str(self.workspace.root))} || {fail}"]
        for procs in self.cage.join_files() if self.cage else []:
            lines.append(
                f"echo $$ > {q(str(procs))} || "
                f"{{ echo 'bashgym: cannot join the session cgroup' >&2; {fail}; }}"
            )
        flags = {"cpu": "-t", "fsize_kb": "-f", "as_kb": "-v", "nproc": "-u"}
        if self._limits:
            args = " ".join(f"{flags[k]} {v}" for k, v in self._limits.items())
            lines.append(f"ulimit {args} || {fail}")
        if "cpu" in self._limits and self.options.cpu_s:  # SIGXCPU at cpu_s says why; the
            soft = min(self.options.cpu_s, self._limits["cpu"])  # hard limit (SIGKILL) is later
            lines.append(f"ulimit -S -t {soft} || {fail}")
        lines.append('exec "$@"')
        return [bash_path(), "-c", "\n".join(lines), "bashgym-sandbox"]

    def _explain(self, done: Completed, before: tuple[int, int]) -> Completed:
        """Add to `done.reason` what the limits did: forks refused, processes OOM-killed."""
        extra = []
        if self.cage is not None:
            refused, oom = self.cage.counters()
            if oom > before[1]:
                extra.append(f"memory limit ({self.options.memory_mb} MB) reached")
            if refused > before[0]:
                extra.append(f"process limit ({self.options.processes}) reached")
        if done.exit_code in _SIGNAL_EXITS:
            extra.append(_SIGNAL_EXITS[done.exit_code])
        if not extra:
            return done
        return replace(done, reason=f"{done.reason}; {', '.join(extra)}")
