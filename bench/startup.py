"""How fast `bashgym` starts with every plugin installed: whole processes, side by side in one run
(rounds interleaved, so load falls on each alike), median of N, as ratios to `python -c pass`.

  - `python -c pass` and `python -c "import bashgym"`: the floor, and the kernel alone;
  - `bashgym --version` (target < 0.3 s): answered before Typer or any plugin is imported;
  - `bashgym --help` (target < 1 s) and completing a command name: from the cached command
    index, no plugin imported;
  - `bashgym run --help`: a command run, so its plugins load (every one, for `run`);
  - once: `bashgym --help` with no index (after an install or an upgrade), which builds it.

The index lives in a temporary XDG_CACHE_HOME, so the user's own cache is not touched.

    uv run python bench/startup.py [ROUNDS]

Measured here (2 cores, load average 1.8, 15 rounds): python -c pass 39 ms; import bashgym
49 ms (1.3x); --version 55 ms (1.4x); --help 282 ms (7.3x); completing a command 167 ms (4.3x);
run --help 1.2 s (31x); the first --help, building the index, 1.2 s. Before the index, on the
same machine: --version 0.9 s, --help 1.0 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
BASHGYM = str(Path(sys.executable).parent / "bashgym")
COMPLETE = {"_BASHGYM_COMPLETE": "complete_bash", "COMP_WORDS": "bashgym pl", "COMP_CWORD": "1"}
CASES: list[tuple[str, list[str], dict[str, str]]] = [
    ("python -c pass", [PYTHON, "-c", "pass"], {}),
    ('python -c "import bashgym"', [PYTHON, "-c", "import bashgym"], {}),
    ("bashgym --version", [BASHGYM, "--version"], {}),
    ("bashgym --help", [BASHGYM, "--help"], {}),
    ("complete `bashgym pl`", [BASHGYM], COMPLETE),
    ("bashgym run --help", [BASHGYM, "run", "--help"], {}),
]


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        env.pop("BASHGYM_LOAD_PLUGINS", None)
        cold = timed([BASHGYM, "--help"], env)  # no index yet: every plugin loaded, then indexed
        times: dict[str, list[float]] = {name: [] for name, _, _ in CASES}
        for _ in range(rounds):
            for name, argv, extra in CASES:
                times[name].append(timed(argv, {**env, **extra}))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["python -c pass"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"whole processes, median of {rounds} (load average {load:.2f}, {os.cpu_count()} CPUs)")
    for name, median in medians.items():
        print(f"  {name:<28} {median * 1000:7.1f} ms = {median / base:5.1f}x python -c pass")
    print(f"  {'first --help (builds index)':<28} {cold * 1000:7.1f} ms, once")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
