"""Benchmarks time what a user waits for, and a user's Python caches the modules it compiles.

A machine that sets PYTHONDONTWRITEBYTECODE (some CI images and sandboxes do) makes every timed
`bashgym` command compile its ~1,300 modules from source again: measured here, a one-session
`bashgym run -s claude-code -k nemo-jsonl` took 2.6 s instead of 1.1 s, and the 250 MB ingest
read 35 MB/s instead of 53. That is a property of the machine, not of BashGym, so the benchmarks
that start `bashgym` processes unset it for their children (the test suite's conftest does the
same). `seed_targets.py` has its own `--no-bytecode` switch to time a first run on purpose."""

from __future__ import annotations

import os


def cache_compiled_modules() -> None:
    """Let the commands this benchmark starts cache their compiled modules, as a user's do;
    says so when it changed the environment, so a figure is never silently from a different
    setting."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print(
            "note: PYTHONDONTWRITEBYTECODE unset for the commands timed here"
            " (a user's Python caches compiled modules)"
        )
