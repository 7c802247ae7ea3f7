"""A model server as a child process: started, waited for until it answers, stopped at exit.

Model runtimes (the embedded llama.cpp server, vLLM) hold gigabytes and every core, so a server
must never outlive BashGym: it is a `bashgym_procs` child (own group, parent-death signal, TERM
then KILL), logs to a temp file kept only when starting fails, and every live one is stopped at
interpreter exit and on SIGTERM. It lives in the process library, beside the policy it extends,
so each runtime plugin (bashgym-models-embedded, bashgym-models-vllm) starts its server the same
way without importing another plugin.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym_procs import spawn, stop


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; the message carries its log tail."""


_live: set[ManagedProcess] = set()
_live_lock = threading.Lock()
_hooks_installed = False


def _stop_all() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        proc.stop()


def _on_sigterm(signum: int, frame: Any) -> None:
    _stop_all()
    raise SystemExit(128 + signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)


@dataclass(eq=False)
class ManagedProcess:
    """A server child logging to a temp file, ready once `ready_url` answers 200."""

    name: str
    cmd: list[str]
    ready_url: str
    env: dict[str, str] | None = None
    start_timeout: float = 180.0
    log_path: Path = field(init=False)
    popen: subprocess.Popen[bytes] | None = field(default=None, init=False)
    keep_log: bool = field(default=False, init=False)

    def start(self) -> None:
        _install_hooks()
        slug = "".join(c if c.isalnum() or c in "._" else "-" for c in self.name)
        fd, log = tempfile.mkstemp(prefix=f"bashgym-{slug}-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as handle:
            self.popen = spawn(
                self.cmd, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                env=self.env,
            )  # fmt: skip
        with _live_lock:
            _live.add(self)
        try:
            self._wait_ready(self.start_timeout)
        except BaseException:
            self.keep_log = True  # the error message points at it
            self.stop()
            raise

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def _wait_ready(self, timeout: float) -> None:
        assert self.popen is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.popen.poll()
            if code is not None:
                raise ServerStartError(
                    f"{self.name} server exited with code {code} before answering; "
                    f"command: {' '.join(self.cmd)}\n--- its log ({self.log_path}) ---\n"
                    f"{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.ready_url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise ServerStartError(
            f"{self.name} server did not answer {self.ready_url} within {timeout:.0f}s\n"
            f"--- its log ({self.log_path}) ---\n{self.log_tail()}"
        )

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        with _live_lock:
            _live.discard(self)
        if self.popen is not None:
            stop(self.popen, grace)
        if not self.keep_log:
            self.log_path.unlink(missing_ok=True)
