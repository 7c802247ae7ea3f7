"""Waiting in a test for something a background `bashgym` process does, without sleeping a
guessed time: poll, fail at once with the process's output if it ended first, and give up
after a hang guard (a guard, not a timing claim). Tests that start a job and then act while
it runs (cancel it, kill it, add a worktree beside it) share this one loop."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


def wait_while_running(
    condition: Callable[[], object], proc: subprocess.Popen[bytes], timeout: float = 120
) -> None:
    """Return once `condition()` is true; fail if `proc` ended first (with its last output:
    it must be started with stdout=PIPE) or `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            output = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"the process ended early: {output[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting")
        time.sleep(0.1)
