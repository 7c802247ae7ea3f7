"""Environment `local`: a command in a `bash` child of BashGym, with every limit this machine
allows and namespaces where `unshare` works. See the package docstring for what it holds."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bashgym_sandbox import SandboxSession, workspace_folder

from bashgym.contracts import Environment, InputError
from bashgym.store import scratch_dir
from bashgym_environments_local.lockdown import NO_TERMINAL, probe, wrap
from bashgym_environments_local.namespaces import NET, PID, try_unshare
from bashgym_environments_local.options import LocalOptions


class LocalSession(SandboxSession):
    name = "local"

    def __init__(self, workspace: Path, options: LocalOptions) -> None:
        folder = workspace_folder(workspace)
        self.flags, notes = _namespaces(options.network)  # may refuse: before anything is made
        self.lock = probe(self.flags)
        self.tmpdir = str(scratch_dir("bashgym-tmp-"))  # in the run dir: a kill leaves none
        try:
            super().__init__(folder, options, tmpdir=self.tmpdir)
        except BaseException:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
        self.notes += notes + self.lock.notes

    def guards(self) -> list[str]:
        return [NO_TERMINAL]

    def wrap(self, argv: list[str]) -> list[str]:
        return wrap(argv, self.flags, self.lock)

    def describe(self) -> list[str]:
        net = (
            "cut (own network namespace: loopback only)"
            if NET[0] in self.flags
            else "ON (the host's; network=false cuts it)"
        )
        pid = (
            "own PID namespace: other processes are invisible; what a command leaves running "
            "stops when it ends"
            if PID[0] in self.flags
            else "shared with the host: a command sees every process, can signal those of its "
            "user (BashGym included) and read their environment (/proc/PID/environ; not "
            "BashGym's, see secrets), and may leave processes running"
        )
        return [
            f"network: {net}",
            f"processes: {pid}",
            "files: writes outside the workspace are NOT contained (the command runs as "
            "BashGym's user; as root it can change the whole machine), and reads are not "
            "limited (as root, /etc/shadow included); the workspace file operations refuse "
            "paths that leave it",
            *self.lock.describe(root=os.geteuid() == 0, pid=PID[0] in self.flags),
            *super().describe(),
        ]

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await asyncio.to_thread(shutil.rmtree, self.tmpdir, True)


def _namespaces(network: bool) -> tuple[tuple[str, ...], list[str]]:
    """The `unshare` flags this machine allows for these options, and what it could not do."""
    flags: tuple[str, ...] = ()
    notes: list[str] = []
    if not network:
        why = try_unshare(NET)
        if why is not None:
            raise InputError(
                f"local cannot cut the network here ({why}); set network=true, or use bubblewrap"
            )
        flags += NET
    why = try_unshare(PID) or try_unshare(flags + PID)
    if why is None:
        flags += PID
    else:
        notes.append(f"processes: no PID namespace ({why})")
    return flags, notes


class LocalEnvironment(Environment[LocalOptions]):
    """Commands in a bash child: timeout, rlimits, a cgroup, a scrubbed environment, no
    capabilities, no terminal, BashGym's environment out of reach, no other process in sight
    where `unshare` works (and no network if asked); files outside the workspace are not
    protected. See the package docstring for exactly what holds."""

    isolation = 10  # the default for agent runs where it works (kernel: most isolating)

    description = (
        "Commands in a bash child: timeout, limits, scrubbed env, no capabilities, own PID "
        "namespace; files outside the workspace NOT protected (use bubblewrap)."
    )

    def available(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return "local needs Linux (process groups with a death signal, /proc)"
        if shutil.which("bash") is None:
            return "bash is not installed"
        return None

    @asynccontextmanager
    async def open(self, workspace: Path, options: LocalOptions) -> AsyncIterator[LocalSession]:
        session = LocalSession(workspace, options)
        try:
            yield session
        finally:
            await session.aclose()
