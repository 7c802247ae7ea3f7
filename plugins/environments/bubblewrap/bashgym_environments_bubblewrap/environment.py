"""Environment `bubblewrap`: each command in its own bwrap sandbox, under the session's limits.
See the package docstring for what it holds."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bashgym_environments_local import SandboxSession, workspace_folder

from bashgym.contracts import Environment, InputError
from bashgym_environments_bubblewrap.options import BubblewrapOptions
from bashgym_environments_bubblewrap.sandbox import bwrap_argv, hidden_paths, why_not


class BubblewrapSession(SandboxSession):
    name = "bubblewrap"

    def __init__(self, workspace: Path, options: BubblewrapOptions) -> None:
        folder = workspace_folder(workspace)
        why = why_not(options.bwrap)
        if why is not None:
            raise InputError(f"environment bubblewrap cannot run here: {why}")
        bwrap = shutil.which(options.bwrap)
        assert bwrap is not None  # why_not found it
        self.hidden = hidden_paths(options.hide)
        self.writable = [Path(os.path.realpath(os.path.expanduser(p))) for p in options.writable]
        for path in self.writable:
            if not path.is_dir() or path == Path("/"):
                raise InputError(f"writable {path}: not a folder (or it is /)")
        self.tmp = Path(tempfile.mkdtemp(prefix="bashgym-tmp-"))
        self.prefix = bwrap_argv(
            bwrap,
            folder.root,
            network=options.network,
            hide=self.hidden,
            writable=self.writable,
            tmp=self.tmp,
        )
        try:
            super().__init__(folder, options, tmpdir="/tmp")
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise

    def wrap(self, argv: list[str]) -> list[str]:
        return [*self.prefix, *argv]

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await asyncio.to_thread(shutil.rmtree, self.tmp, True)

    def describe(self) -> list[str]:
        o = self.options
        assert isinstance(o, BubblewrapOptions)
        hidden = ", ".join(str(p) for p in self.hidden) or "nothing (none of them exists here)"
        return [
            "network: " + ("ON (the host's)" if o.network else "cut (own network namespace)"),
            "processes: own PID namespace: other processes are invisible; what a command "
            "leaves running stops when it ends",
            "files: only the workspace is writable"
            + "".join(f", {p}" for p in self.writable)
            + " (and the session's own /tmp); the rest of the system is read-only; no "
            "capabilities, even as root",
            f"hidden: {hidden}",
            *super().describe(),
        ]


class BubblewrapEnvironment(Environment[BubblewrapOptions]):
    """Commands in bwrap: no network, only the workspace writable, own PID namespace, hidden
    credentials, with local's limits and scrubbed environment (as Claude Code's Linux sandbox)."""

    description = (
        "Commands in bwrap: no network, only the workspace writable, own PID namespace, "
        "hidden credentials, local's limits."
    )

    def available(self) -> str | None:
        return why_not("bwrap")

    @asynccontextmanager
    async def open(
        self, workspace: Path, options: BubblewrapOptions
    ) -> AsyncIterator[BubblewrapSession]:
        session = BubblewrapSession(workspace, options)
        try:
            yield session
        finally:
            await session.aclose()
