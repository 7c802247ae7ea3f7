"""The warm sandbox pool, seen from BashGym: workers started through an environment, leased one
episode at a time.

The CSV is copied once into a sealed memfd (`sealed_copy`): the kernel refuses every write to
it, root's included, and each worker inherits it as a file descriptor, so the CSV is read-only
to the code and needs no path inside the sandbox (bubblewrap hides the host's /tmp).

Each worker is one `worker` process started with the argv and environment its
`EnvironmentSession.argv()` gives (so it runs inside bubblewrap, or under local's limits), in
its own process group that dies with BashGym (`bashgym_procs.child_setup`), with the session's
workspace as its scratch folder. `episode()` leases an idle worker, opens a fresh episode in it
(a forked child: see `worker`), and closes it when the episode ends, so the next lease starts
from the pristine state. A worker that stops answering (its relay hung, or the code killed it)
is stopped, group and all, and started again; the episode goes on in the new one, told that
its variables are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym_procs import astop, child_setup

from bashgym.contracts import Environment, EnvironmentSession
from bashgym_pipelines_csv_triangulation.protocol import new_nonce

WORKER_MODULE = "bashgym_pipelines_csv_triangulation.worker"
REPLY_LIMIT = 8 * 1024 * 1024  # one JSON reply line: output + answer + hooks
RELAY_GRACE_S = 10.0  # beyond a cell's wall limit, how long the relay may take to answer
# One thread per numeric library: the worker forks, and a fork must not copy idle BLAS threads.
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class SandboxError(RuntimeError):
    """A worker could not start (the message carries the end of its stderr)."""


class WorkerLost(RuntimeError):
    """A worker stopped answering or exited; it has been stopped."""


@dataclass
class CellResult:
    """How one code cell ended, what it printed, and what it submitted."""

    status: str  # ok, error, timeout, cpu, memory, output, crashed, protocol
    output: str = ""
    error: str | None = None
    submitted: bool = False
    answer: Any = None
    answer_type: str | None = None
    hooks: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float | None = None
    restarted: bool = False  # the episode's variables were lost before this cell ran
    truncated: bool = False

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> CellResult:
        known = {k: reply[k] for k in cls.__dataclass_fields__ if k in reply}
        return cls(**known)

    def shown(self) -> str:
        """What the model sees of this cell."""
        parts = []
        if self.restarted:
            parts.append("[the sandbox was restarted before this cell: earlier variables are gone]")
        if self.output.strip():
            parts.append(self.output.rstrip())
        if self.error:
            parts.append(self.error.rstrip())
        if self.submitted:
            parts.append(f"[submitted: {json.dumps(self.answer)[:500]}]")
        return "\n".join(parts) or "[no output]"


def sealed_copy(path: Path) -> int:
    """A memfd holding the file's bytes, sealed against any write, resize or further sealing."""
    fd = os.memfd_create(path.name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    try:
        with path.open("rb") as source, open(fd, "wb", closefd=False) as target:
            shutil.copyfileobj(source, target, 1024 * 1024)
        seals = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except BaseException:
        os.close(fd)
        raise
    return fd


class WarmWorker:
    """One worker process in one environment session."""

    def __init__(
        self,
        session: EnvironmentSession,
        *,
        csv_fd: int | None,
        csv_name: str | None,
        preload: Sequence[str],
        start_timeout_s: float,
    ) -> None:
        self.session, self.csv_fd, self.csv_name = session, csv_fd, csv_name
        self.preload, self.start_timeout_s = list(preload), start_timeout_s
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr: deque[str] = deque(maxlen=40)
        self._drain: asyncio.Task[None] | None = None
        self.starts = 0
        self.info: dict[str, Any] = {}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def command(self) -> list[str]:
        argv = [sys.executable, "-I", "-m", WORKER_MODULE,
                "--scratch", str(self.session.workspace.root),
                "--preload", ",".join(self.preload)]  # fmt: skip
        if self.csv_fd is None:
            return argv
        # `--opt=value`: a file named `-x.csv` is a value, never an option of the worker
        return [*argv, f"--csv-fd={self.csv_fd}", f"--csv-name={self.csv_name}"]

    async def start(self) -> None:
        argv, env = self.session.argv(self.command())
        self.starts += 1
        self.stderr.clear()
        self.proc = await asyncio.create_subprocess_exec(
            *argv, env={**env, **THREADS}, cwd=self.session.workspace.root,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            preexec_fn=child_setup(), limit=REPLY_LIMIT,
            pass_fds=() if self.csv_fd is None else (self.csv_fd,),
        )  # fmt: skip
        self._drain = asyncio.create_task(self._keep_stderr(self.proc))
        try:
            ready = await self._read(self.start_timeout_s)
        except WorkerLost as exc:
            raise SandboxError(f"the sandbox worker did not start: {exc}{self._tail()}") from None
        if not ready.get("ready"):
            await self.stop()
            raise SandboxError(f"the sandbox worker failed: {ready.get('error')}{self._tail()}")
        self.info = ready

    async def _keep_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            self.stderr.append(line.decode("utf-8", errors="replace").rstrip())

    def _tail(self) -> str:
        lines = [line for line in self.stderr if line.strip()]
        return ("\n--- its stderr ---\n" + "\n".join(lines[-15:])) if lines else ""

    async def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        if not self.alive:
            raise WorkerLost("the worker is not running")
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.stop()
            raise WorkerLost("the worker closed its input") from None
        return await self._read(timeout)

    async def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except (TimeoutError, ValueError) as exc:  # ValueError: a line over REPLY_LIMIT
            await self.stop()
            why = "no answer in time" if isinstance(exc, TimeoutError) else "an oversized reply"
            raise WorkerLost(f"{why}; the worker was stopped") from None
        if not line:
            code = await self.proc.wait()
            await self.stop()
            raise WorkerLost(f"the worker exited (code {code})")
        return json.loads(line)

    async def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.returncode is None:
                await astop(proc, grace=1.0)
            if proc.stdin is not None:
                proc.stdin.close()
        if self._drain is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._drain, 2.0)
            self._drain = None


class EpisodeHandle:
    """One episode's lease on a worker: run cells in one namespace."""

    def __init__(self, pool: SandboxPool, worker: WarmWorker) -> None:
        self.pool, self.worker = pool, worker
        self.nonce = new_nonce()
        self.lost = False  # the next cell runs in a fresh namespace
        self.broken: str | None = None  # the worker cannot be started again: why

    async def open(self) -> None:
        if not self.worker.alive:
            await self.pool.restart(self.worker)
        reply = await self.worker.request(
            {"op": "open", "nonce": self.nonce, "limits": self.pool.limits},
            self.pool.relay_timeout,
        )
        if not reply.get("ok"):
            raise SandboxError(f"the sandbox worker could not open an episode: {reply}")

    async def run(self, code: str) -> CellResult:
        """Run one cell; a worker lost on the way is restarted and the cell reported as such."""
        if self.broken is not None:
            return CellResult(status="crashed", error=self.broken)
        started = time.perf_counter()
        try:
            reply = await self.worker.request({"op": "run", "code": code}, self.pool.relay_timeout)
        except WorkerLost as exc:
            self.lost = True
            error = f"the sandbox worker was lost ({exc}) and restarted"
            try:
                await self.open()
            except (SandboxError, WorkerLost) as again:
                self.broken = error = f"the sandbox worker was lost ({exc}): {again}"
            return CellResult(
                status="crashed", error=error, wall_s=round(time.perf_counter() - started, 4)
            )
        result = CellResult.from_reply(reply)
        if self.lost:
            result.restarted, self.lost = True, False
        return result


class SandboxPool:
    """`size` warm workers, each in its own session of `environment` (its own workspace)."""

    def __init__(
        self,
        environment: Environment[Any],
        environment_options: Any,
        root: Path,
        *,
        csv: Path | None,
        limits: dict[str, Any],
        size: int,
        preload: Sequence[str] = ("pandas", "numpy"),
        start_timeout_s: float = 120.0,
    ) -> None:
        self.environment, self.environment_options = environment, environment_options
        self.root, self.csv, self.limits, self.size = Path(root), csv, dict(limits), size
        self.preload, self.start_timeout_s = list(preload), start_timeout_s
        self.relay_timeout = float(limits.get("wall_s", 30)) + RELAY_GRACE_S
        self.workers: list[WarmWorker] = []
        self.csv_fd: int | None = None
        self.restarts = 0
        self._idle: asyncio.Queue[WarmWorker] = asyncio.Queue()
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> SandboxPool:
        try:
            if self.csv is not None:
                self.csv_fd = sealed_copy(self.csv)
            for i in range(self.size):
                folder = self.root / f"worker-{i}"
                folder.mkdir(parents=True, exist_ok=True)
                session = await self._stack.enter_async_context(
                    self.environment.open(folder, self.environment_options)
                )
                self.workers.append(
                    WarmWorker(
                        session,
                        csv_fd=self.csv_fd,
                        csv_name=self.csv.name if self.csv is not None else None,
                        preload=self.preload,
                        start_timeout_s=self.start_timeout_s,
                    )
                )
            await asyncio.gather(*(w.start() for w in self.workers))
        except BaseException:
            await self.aclose()
            raise
        for worker in self.workers:
            self._idle.put_nowait(worker)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await asyncio.gather(*(w.stop() for w in self.workers), return_exceptions=True)
        await self._stack.aclose()
        if self.csv_fd is not None:
            os.close(self.csv_fd)
            self.csv_fd = None

    async def restart(self, worker: WarmWorker) -> None:
        self.restarts += 1
        await worker.stop()
        await worker.start()

    @asynccontextmanager
    async def episode(self) -> AsyncIterator[EpisodeHandle]:
        """Lease a worker for one episode; it goes back reset (or restarted) afterwards."""
        worker = await self._idle.get()
        try:
            handle = EpisodeHandle(self, worker)
            await handle.open()
            yield handle
        finally:
            try:
                await worker.request({"op": "close"}, self.relay_timeout)
            except WorkerLost:
                pass  # stopped already; the next lease starts it again
            except BaseException:  # cancelled while closing: never hand back a busy worker
                await worker.stop()
                raise
            finally:
                self._idle.put_nowait(worker)

    @property
    def description(self) -> str:
        return f"{self.size} warm worker(s) in environment {self.environment_name}"

    @property
    def environment_name(self) -> str:
        names = {w.session.name for w in self.workers}
        return ", ".join(sorted(names)) or "?"
