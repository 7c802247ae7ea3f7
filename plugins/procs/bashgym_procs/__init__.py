"""Child processes, one way: own process group, dies with its parent, stopped TERM then KILL.

A library for the plugins that start processes (the kernel starts none): one copy of this
policy, so a fix reaches every user. Used by model runtimes (servers that must never outlive
BashGym: they hold gigabytes and both cores), executors (`claude -p`) and environments (an
agent's commands). Every child starts in its own session, so one signal reaches its whole
group; `PR_SET_PDEATHSIG` kills it if BashGym dies by `kill -9` (model servers,
`bashgym_procs.served`, are also stopped at exit and on SIGTERM). The death signal
fires when the *thread* that forked the child ends, so blocking spawns fork from one
long-lived launcher thread, and async ones from the event loop's thread (alive for the run).

Why not a third-party library: subprocess and asyncio give every piece; what they lack is
exactly this policy, and psutil (the usual helper) cannot set rlimits or death signals before
exec.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import queue
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym.records import Completed

PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Limits:
    """rlimits for a child: CPU seconds, address space and file size in MB, processes."""

    cpu_s: int | None = None
    memory_mb: int | None = None
    file_size_mb: int | None = None
    processes: int | None = None


def child_setup(
    limits: Limits | None = None, *, die_with_parent: bool = True
) -> Callable[[], None]:
    """A `preexec_fn`: the death signal and rlimits, set in the child before exec."""

    def setup() -> None:
        if die_with_parent and sys.platform == "linux":
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if limits is None:
            return
        mb = 1024 * 1024
        for name, value in (
            ("RLIMIT_CPU", limits.cpu_s),
            ("RLIMIT_AS", limits.memory_mb and limits.memory_mb * mb),
            ("RLIMIT_FSIZE", limits.file_size_mb and limits.file_size_mb * mb),
            ("RLIMIT_NPROC", limits.processes),
        ):
            if value:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(getattr(resource, name), (value, value))

    return setup


# --- one long-lived thread forks every blocking spawn (PR_SET_PDEATHSIG is per forking thread) --
_jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
_launcher: threading.Thread | None = None
_launcher_lock = threading.Lock()


def _launch_loop() -> None:
    while True:
        fn, fut = _jobs.get()
        try:
            fut.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller
            fut.set_exception(exc)


def spawn(
    argv: Sequence[str], *, limits: Limits | None = None, **popen: Any
) -> subprocess.Popen[bytes]:
    """`Popen(argv, start_new_session=True, ...)` that dies with us, forked by the launcher."""
    global _launcher
    with _launcher_lock:
        if _launcher is None or not _launcher.is_alive():
            _launcher = threading.Thread(target=_launch_loop, name="bashgym-launcher", daemon=True)
            _launcher.start()
    fut: Future[subprocess.Popen[bytes]] = Future()
    make = lambda: subprocess.Popen(  # noqa: E731
        list(argv), start_new_session=True, preexec_fn=child_setup(limits), **popen
    )
    _jobs.put((make, fut))
    return fut.result()


def signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop(popen: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """SIGTERM the child's process group, wait `grace` s, then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        signal_group(popen.pid, sig)
        try:
            popen.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    signal_group(popen.pid, signal.SIGKILL)  # the leader is gone; its group goes too


async def astop(proc: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    """The async twin of `stop`."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        signal_group(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            break
        except TimeoutError:
            continue
    signal_group(proc.pid, signal.SIGKILL)


@functools.cache
def _setpriv() -> str | None:
    """util-linux's `setpriv` when it can set the death signal (2.33+), else None."""
    found = shutil.which("setpriv")
    if found is None:
        return None
    try:
        probe = subprocess.run(
            [found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found if probe.returncode == 0 else None


def _launch(
    argv: Sequence[str], limits: Limits | None, env: dict[str, str] | None
) -> tuple[list[str], Callable[[], None] | None]:
    """The argv and `preexec_fn` that start `argv` under the policy.

    A `preexec_fn` makes Python `fork()` the whole process (no vfork) and run Python in the
    child: 8 ms a child in a small process, ~35 ms in a 250 MB one (bench/orchestrator.py (c);
    the orchestrator runs ~15 git commands a task). With no rlimits to set, the death signal
    is set by `setpriv --pdeathsig KILL` (the child itself, before it execs the program: the
    same per-thread semantics as prctl in a preexec_fn), and Python can vfork. The program is
    resolved on the child's PATH first; one that is not found takes the preexec_fn path, so a
    missing program still raises FileNotFoundError as before."""
    argv = list(argv)
    setpriv = _setpriv() if limits is None and sys.platform == "linux" else None
    if setpriv is not None and argv:
        program = argv[0]
        if os.sep not in program:
            path = os.pathsep.join(os.get_exec_path(env))
            program = shutil.which(program, path=path) or ""
        elif not os.path.isabs(program):  # relative to the child's cwd: let exec say
            program = ""
        if program and os.path.isfile(program) and os.access(program, os.X_OK):
            return [setpriv, "--pdeathsig", "KILL", "--", program, *argv[1:]], None
    return argv, child_setup(limits)


_SIGNAL_REASONS = {
    signal.SIGXCPU: "CPU time limit reached",
    signal.SIGXFSZ: "file size limit reached",
}


async def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    limits: Limits | None = None,
    output_limit: int = 64_000,
    stdin: bytes | None = None,
) -> Completed:
    """Run `argv` to the end, its stdout and stderr captured together.

    Output beyond `output_limit` bytes keeps its head and tail with a marker in between; a child
    that writes over 100 times that is stopped ("output limit"). At the timeout, or when the
    caller is cancelled, the whole process group is stopped.
    """
    started = time.monotonic()
    argv, setup = _launch(argv, limits, env)
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, start_new_session=True, preexec_fn=setup,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    capture = _Capture(output_limit)
    stopped: str | None = None
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
        try:
            stopped = await asyncio.wait_for(_drain(proc, capture), timeout)
        except TimeoutError:
            stopped = f"timed out after {timeout:g}s"
        if stopped:
            await astop(proc)
            if proc.stdout is not None:  # read the pipe to its end, so its transport closes
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.stdout.read(), 5)
        code = await proc.wait()
    finally:
        if proc.returncode is None:  # cancelled: never leave the group running
            await asyncio.shield(astop(proc))
    return _completed(code, stopped, capture, time.monotonic() - started)


async def _drain(proc: asyncio.subprocess.Process, capture: _Capture) -> str | None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        if not capture.add(chunk):
            return f"output over {capture.hard_cap:,} bytes: stopped"
    return None


def _completed(code: int, stopped: str | None, capture: _Capture, duration: float) -> Completed:
    if stopped:
        reason, exit_code = stopped, None
    elif code < 0:
        sig = signal.Signals(-code)
        reason, exit_code = _SIGNAL_REASONS.get(sig, f"killed by {sig.name}"), None
    else:
        reason, exit_code = f"exited {code}", code
    return Completed(
        exit_code=exit_code,
        output=capture.text(),
        reason=reason,
        duration_s=round(duration, 3),
        timed_out=stopped is not None and stopped.startswith("timed out"),
        truncated=capture.total > capture.limit,
    )


@dataclass
class _Capture:
    """Head and tail of a stream, `limit` bytes in all; counts what it left out."""

    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    @property
    def hard_cap(self) -> int:
        return self.limit * 100

    def add(self, chunk: bytes) -> bool:
        self.total += len(chunk)
        half = self.limit // 2
        room = half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail = (self.tail + chunk)[-half:] if chunk else self.tail
        return self.total <= self.hard_cap

    def text(self) -> str:
        left_out = self.total - len(self.head) - len(self.tail)
        body = bytes(self.head)
        if left_out > 0:
            body += f"\n[... {left_out} bytes of output left out ...]\n".encode()
        return (body + bytes(self.tail)).decode("utf-8", errors="replace")


# Submodules with their own job, reachable as `procs.git`, `procs.names` and `procs.served`
# (imported last: they use what this module defines).
from bashgym_procs import git as git  # noqa: E402
from bashgym_procs import names as names  # noqa: E402
from bashgym_procs import served as served  # noqa: E402
