"""How fast `bashgym` starts with every plugin installed: whole processes, side by side in one run
(rounds interleaved, so load falls on each alike), median of N, as ratios to `python -c pass`.

  - `python -c pass` and `python -c "import bashgym"`: the floor, and the kernel alone;
  - `bashgym --version` (target < 0.3 s): answered before Typer or any plugin is imported;
  - `bashgym --help` (target < 1 s) and completing a command name: from the cached command
    index, no plugin imported;
  - `bashgym run --help` and completing `run`'s options (`-k <TAB>`, `--set source.<TAB>`): the
    command's own plugin and the default ones load (names and option names come from the
    index's plugin catalogue);
  - a run's start-up (a `--set` mistake, exit 2: stops once the run is resolved) and a whole tiny
    run (files -> parquet): the plugins the run uses load, not every one;
  - once: `bashgym --help` with no index (after an install or an upgrade), which builds it.

The index lives in a temporary XDG_CACHE_HOME, so the user's own cache is not touched.

    uv run python bench/startup.py [ROUNDS]

Measured here (2 cores, load average 1.4-1.7, 9 rounds), before -> after a run loaded only its
plugins (the "before" run with the previous bashgym_cli and bashgym_commands_run first on
PYTHONPATH): python -c pass 36 ms; import bashgym 49 ms; --version 52 -> 51 ms; --help 253 ->
247 ms; completing a command 143 -> 138 ms; run --help 1197 -> 481 ms; completing `run -k `
1098 -> 366 ms; completing `--set source.` 1024 -> 370 ms; a run's start-up 1100 -> 770 ms (the
rest is pandas, which the files source and the parquet sink import); the tiny run 1347 -> 1078
ms; the first --help, building the index (now with the plugin catalogue), 1.2 s. Before the
index, on the same machine: --version 0.9 s, --help 1.0 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
BASHGYM = str(Path(sys.executable).parent / "bashgym")
TASKS = str(Path(__file__).resolve().parent.parent / "examples" / "tasks.csv")
RUN_DIR = os.path.join(tempfile.gettempdir(), f"bashgym-bench-{os.getpid()}")
TINY = ["-s", "files", "--set", f"source.path={TASKS}", "-k", "parquet", "-n", "2"]


def complete(words: str) -> dict[str, str]:
    """The environment a shell's completion script gives `bashgym` to complete `words`."""
    cword = str(len(words.split(" ")) - 1)
    return {"_BASHGYM_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}


# name, argv, extra environment, the exit code it must end with
CASES: list[tuple[str, list[str], dict[str, str], int]] = [
    ("python -c pass", [PYTHON, "-c", "pass"], {}, 0),
    ('python -c "import bashgym"', [PYTHON, "-c", "import bashgym"], {}, 0),
    ("bashgym --version", [BASHGYM, "--version"], {}, 0),
    ("bashgym --help", [BASHGYM, "--help"], {}, 0),
    ("complete `bashgym pl`", [BASHGYM], complete("bashgym pl"), 0),
    ("bashgym run --help", [BASHGYM, "run", "--help"], {}, 0),
    ("complete `run -k `", [BASHGYM], complete("bashgym run -k "), 0),
    ("complete `run -s files --set source.`", [BASHGYM],
     complete("bashgym run -s files --set source."), 0),
    # a run's start-up alone: its plugins loaded, its options checked, then a mistake (exit 2)
    ("run start-up (bad --set)", [BASHGYM, "run", *TINY, "--set", "source.nope=1"], {}, 2),
    ("tiny run: files -> parquet", [BASHGYM, "run", *TINY, "-o", RUN_DIR, "--fresh"], {}, 0),
]  # fmt: skip


def timed(argv: list[str], env: dict[str, str], expect: int = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def main(rounds: int) -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        env.pop("BASHGYM_LOAD_PLUGINS", None)
        cold = timed([BASHGYM, "--help"], env)  # no index yet: every plugin loaded, then indexed
        times: dict[str, list[float]] = {name: [] for name, _, _, _ in CASES}
        for _ in range(rounds):
            for name, argv, extra, expect in CASES:
                times[name].append(timed(argv, {**env, **extra}, expect))
        shutil.rmtree(RUN_DIR, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["python -c pass"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"whole processes, median of {rounds} (load average {load:.2f}, {os.cpu_count()} CPUs)")
    for name, median in medians.items():
        print(f"  {name:<38} {median * 1000:7.1f} ms = {median / base:5.1f}x python -c pass")
    print(f"  {'first --help (builds index)':<38} {cold * 1000:7.1f} ms, once")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
