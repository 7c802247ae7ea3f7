"""The embedded server's command line, and one shared server per configuration.

Starting, watching and stopping the child (own process group, death with its parent, TERM then
KILL, stopped at exit) is the process library's (`bashgym_procs.served`); the server itself
also watches its parent (`--parent-pid`), which covers `kill -9` of the parent. Users share one
server per configuration through a reference count: nested `serve()` calls reuse it and the
last one out stops it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym_procs import free_port
from bashgym_procs.served import ManagedProcess, ServerStartError

__all__ = [
    "ManagedProcess", "ServerStartError", "embedded_command", "free_port", "server_env", "shared",
]  # fmt: skip

SERVER_MODULE = "bashgym_models_embedded.server"


def embedded_command(
    model: Path, *, port: int, model_id: str, threads: int, ctx: int, parallel: int, batch: int,
    lora: Path | None = None,
) -> list[str]:  # fmt: skip
    return [
        sys.executable, "-m", SERVER_MODULE, "--model", str(model), "--model-id", model_id,
        "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads), "--ctx", str(ctx),
        "--parallel", str(parallel), "--batch", str(batch), "--parent-pid", str(os.getpid()),
        *(["--lora", str(lora)] if lora else []),
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    """The server's environment: this process's, OpenMP's wait policy included as the user set
    it (`OMP_WAIT_POLICY`), else OpenMP's own default (spin briefly, then sleep).

    Why not PASSIVE by default (tried): a passive thread sleeps at every barrier of every
    token's graph, not once a token. On a quiet 2-core machine the embedded server decoded 19
    tokens/s passive against 26-30 with OpenMP's default at one request, 33 against 50-59 at
    four (bench/embedded_throughput.py). The README's main job, mostly prompt processing, showed
    no difference beyond its runs' own spread (0.13-0.15 s per output token either way). Where
    the server shares the cores with much other work, as three pytest workers do (the root
    conftest.py sets it for the suite), `OMP_WAIT_POLICY=PASSIVE` is the better choice: one
    request there measured 26 s passive against 58-113 s spinning."""
    return dict(os.environ)


# --- the reference-counted share ---------------------------------------------------------------
@dataclass
class _Shared:
    proc: ManagedProcess
    users: int = 0


_shared: dict[tuple[Any, ...], _Shared] = {}
_shared_lock = threading.Lock()


@contextlib.contextmanager
def shared(key: tuple[Any, ...], make: Callable[[], ManagedProcess]) -> Iterator[ManagedProcess]:
    """One started process per `key` in this process; the last user out stops it."""
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None or not entry.proc.alive():
            proc = make()
            proc.start()
            entry = _shared[key] = _Shared(proc)
        entry.users += 1
    try:
        yield entry.proc
    finally:
        with _shared_lock:
            entry.users -= 1
            if entry.users <= 0:
                entry.proc.stop()
                if _shared.get(key) is entry:
                    del _shared[key]
