"""A bench's scripted model server in a child process: the bench script run again as
`SCRIPT --serve PORT LATENCY`, which prints `ready` once it listens. In a child, the server never
holds the measured process's GIL, so what a bench times is BashGym, not the stand-in model.
Shared by bench/executors.py and bench/ray_backend.py (each passes its own answers)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any


def start_server(script: str, latency: float) -> tuple[subprocess.Popen[str], int]:
    """Start `script --serve PORT LATENCY` and wait for its `ready`; the process and its port."""
    from bashgym_procs import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, script, "--serve", str(port), str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("the scripted server did not start")
    return proc, port


def serve(port: int, latency: float, rules: Sequence[tuple[Callable[[Any], bool], Any]]) -> None:
    """The child's side: the scripted server on `port`, every request waiting `latency` s,
    answering by `rules` (predicate, reply), until stdin closes (the bench's end, or its
    death)."""
    from bashgym_testing.server import ScriptedModelServer

    with ScriptedModelServer(port=port) as server:
        server.latency = latency
        for when, reply in rules:
            server.add_rule(when, reply)
        print("ready", flush=True)
        sys.stdin.read()
