"""The API's child processes: `bashgym ...` started detached, found again by pid after a restart.

Why not `bashgym_procs.spawn`: its children die with their parent (PR_SET_PDEATHSIG), right for
model servers, wrong for jobs: a job must outlive a restart of the API server, which then finds
it again from its run directory. What is kept from that policy: every child leads its own
process group (one signal reaches the whole job), stopped SIGTERM first, SIGKILL after a grace.
A pid read from disk is trusted only while that process's command line names the job's
directory, so a reused pid is never signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bashgym_procs import signal_group

# This server's own children, until reaped. Why not only /proc: the kernel runs the child's
# close-on-exec (which ends Popen's wait) before it sets the new program's argument area, so a
# check right after start() can read an empty cmdline and call a child that just started dead
# (seen on a loaded CI box: a second approve was let through). An unreaped child's pid cannot
# be reused, so while it is here it is alive (its marker checked in the argv it was started
# with); /proc answers for jobs found after a restart.
_children: dict[int, str] = {}
_children_lock = threading.Lock()


def bashgym_argv() -> list[str]:
    """How to start `bashgym` with this interpreter's installation."""
    script = Path(sys.executable).parent / "bashgym"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "bashgym"]


def start(
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
    on_exit: Callable[[int], None] | None = None,
) -> int:
    """Start `argv` in its own session, stdout and stderr appended to `log`; returns its pid.
    A thread waits for it, so a finished child never lingers as a zombie, and then calls
    `on_exit(returncode)` when given."""
    with log.open("ab") as out:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )

    with _children_lock:
        _children[popen.pid] = " ".join(argv)

    def reap() -> None:
        code = popen.wait()
        with _children_lock:
            _children.pop(popen.pid, None)
        if on_exit is not None:
            on_exit(code)

    threading.Thread(target=reap, name=f"reap-{popen.pid}", daemon=True).start()
    return popen.pid


def alive(pid: int | None, marker: str) -> bool:
    """True while process `pid` runs (not a zombie) and its command line contains `marker`."""
    if not pid:
        return False
    with _children_lock:
        if pid in _children:
            return marker in _children[pid]
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X") and marker.encode() in cmdline


def stop_group(pid: int, marker: str, grace: float) -> None:
    """SIGTERM `pid`'s process group now; SIGKILL it after `grace` s if it still runs (in a
    thread: the caller answers at once)."""
    if not alive(pid, marker):
        return
    signal_group(pid, signal.SIGTERM)

    def later() -> None:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not alive(pid, marker):
                return
            time.sleep(0.1)
        if alive(pid, marker):
            signal_group(pid, signal.SIGKILL)

    threading.Thread(target=later, name=f"stop-{pid}", daemon=True).start()


def child_env() -> dict[str, str]:
    """The server's environment for a child, without the API token's value."""
    return {k: v for k, v in os.environ.items() if k != "BASHGYM_API_TOKEN_VALUE"}
