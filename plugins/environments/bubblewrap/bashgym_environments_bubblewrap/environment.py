"""Environment `bubblewrap`: each command in its own bwrap sandbox, under the session's limits.
See the package docstring for what it holds."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from bashgym_sandbox import SandboxSession, workspace_folder

from bashgym.contracts import Environment, InputError
from bashgym.records import Completed
from bashgym.store import scratch_dir
from bashgym_environments_bubblewrap.disk import MB, DiskWatch
from bashgym_environments_bubblewrap.options import BubblewrapOptions
from bashgym_environments_bubblewrap.sandbox import (
    SECCOMP_FD,
    bwrap_argv,
    hidden_paths,
    seccomp_filter,
    userns_flags,
    why_not,
    with_filter,
)


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
        self.userns, self.userns_line = userns_flags(bwrap)
        bpf, self.seccomp_line = seccomp_filter(bwrap)
        # the session's own folder: its /tmp, and the filter where no command can change it
        self.home = scratch_dir("bashgym-tmp-")  # in the run dir: a kill leaves none
        self.tmp = self.home / "tmp"
        self.tmp.mkdir()
        self.filter: Path | None = None
        if bpf is not None:
            self.filter = self.home / "seccomp.bpf"
            self.filter.write_bytes(bpf)
            self.filter.chmod(0o400)
        self.prefix = bwrap_argv(
            bwrap,
            folder.root,
            network=options.network,
            hide=self.hidden,
            writable=self.writable,
            tmp=self.tmp,
            userns=self.userns,
            seccomp_fd=SECCOMP_FD if self.filter is not None else None,
        )
        self.disk: DiskWatch | None = None
        self._running: set[tuple[asyncio.AbstractEventLoop, asyncio.Task]] = set()
        # held while a disk stop clears the cage: forks are refused (pids.max 0) until it ends,
        # so a command started meanwhile would fail in bwrap's clone (EAGAIN), not run
        self._stopping = threading.Lock()
        try:
            super().__init__(folder, options, tmpdir="/tmp")
            self.notes += [
                line for line in (self.userns_line, self.seccomp_line) if line.startswith("NO ")
            ]
            if options.disk_mb is not None:
                self.disk = DiskWatch([folder.root, self.tmp], options.disk_mb, self._over_disk)
                if self.cage is None:
                    self.notes.append(
                        "disk: at the limit only `run` commands are stopped (no cgroup here "
                        "to stop a worker started through argv)"
                    )
        except BaseException:
            shutil.rmtree(self.home, ignore_errors=True)
            raise

    def wrap(self, argv: list[str]) -> list[str]:
        full = self.disk is not None and self.disk.is_over()
        return with_filter(self.filter, [*self.prefix, *argv], no_growth=full)

    async def run(self, command: str, *, timeout: float | None = None) -> Completed:
        if self.disk is None:
            return await super().run(command, timeout=timeout)
        if self._stopping.locked():  # a disk stop is under way: start once forks are allowed
            await asyncio.to_thread(self._wait_for_stop)
        tripped = self.disk.tripped
        started = time.monotonic()
        inner = asyncio.create_task(super().run(command, timeout=timeout))
        entry = (asyncio.get_running_loop(), inner)
        self._running.add(entry)
        try:
            done = await inner
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.disk.tripped == tripped or (current is not None and current.cancelling()):
                raise  # cancelled by our caller, not by the disk limit
            done = Completed(
                exit_code=None,
                output="",
                reason="stopped",
                duration_s=round(time.monotonic() - started, 3),
            )
        finally:
            self._running.discard(entry)
        # measured again at the end where it may be over: a command shorter than the
        # watcher's interval is seen too, and the next command knows whether files may grow
        if self.disk.may_be_over():
            await asyncio.to_thread(self.disk.look)
        if self.disk.tripped != tripped or self.disk.is_over():
            added = self.disk.grown // MB
            limit = (
                f"disk limit ({self.options.disk_mb} MB) reached ({added} MB added): no file "
                "can grow until files are removed"
            )
            done = replace(done, reason=f"{done.reason}; {limit}")
        return done

    def _wait_for_stop(self) -> None:
        with self._stopping:
            pass

    def _over_disk(self) -> None:
        """Called by the disk watcher's thread: stop what runs in the session. With a cgroup,
        every process in it (commands and workers), then forks are allowed again; else each
        `run` in flight is cancelled (its process group stopped)."""
        if self.cage is not None:
            with self._stopping:
                self.cage.kill_all()
                if "pids" in self.cage.dirs:  # kill_all refuses forks first: allow them again
                    limit = self.cage.limits.get("pids")
                    with contextlib.suppress(OSError):
                        (self.cage.dirs["pids"] / "pids.max").write_text(str(limit or "max"))
            return
        for loop, task in list(self._running):
            loop.call_soon_threadsafe(task.cancel)

    async def aclose(self) -> None:
        try:
            if self.disk is not None:
                await asyncio.to_thread(self.disk.close)
            await super().aclose()
        finally:
            await asyncio.to_thread(shutil.rmtree, self.home, True)

    def describe(self) -> list[str]:
        o = self.options
        assert isinstance(o, BubblewrapOptions)
        hidden = ", ".join(str(p) for p in self.hidden) or "nothing (none of them exists here)"
        disk = (
            f"{o.disk_mb} MB may be added to the workspace and /tmp together (measured every "
            "0.5 s or more; what runs is stopped past it)"
            if self.disk is not None
            else "NOT limited (disk_mb = None)"
        )
        return [
            "network: " + ("ON (the host's)" if o.network else "cut (own network namespace)"),
            "processes: own PID namespace: other processes are invisible; what a command "
            "leaves running stops when it ends",
            "files: only the workspace is writable"
            + "".join(f", {p}" for p in self.writable)
            + " (and the session's own /tmp); the rest of the system is read-only, /proc/sys "
            "and the kernel's other interfaces too; no capabilities, even as root; "
            + self.userns_line,
            f"disk: {disk}",
            f"hidden: {hidden}",
            f"system calls: {self.seccomp_line}",
            *super().describe(),
        ]


class BubblewrapEnvironment(Environment[BubblewrapOptions]):
    """Commands in bwrap: no network, only the workspace writable, own PID namespace, the
    kernel's interfaces read-only, a seccomp filter, hidden credentials, a disk limit, with
    local's limits and scrubbed environment (as Claude Code's Linux sandbox)."""

    isolation = 20  # the default for agent runs where it works (kernel: most isolating)

    description = (
        "Commands in bwrap: no network, only the workspace writable, own PID namespace, "
        "read-only kernel interfaces, seccomp, hidden credentials, a disk limit, local's limits."
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
