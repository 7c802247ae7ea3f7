"""The README main job, timed: rows/minute and keep rate of `bashgym run examples/main.toml`.

Why: the main job is what a new user runs first (the shipped Claude Code sessions seed
coding-agent-sft on the embedded 0.5B model, no key, no network). It must keep at least 5 rows
within 5 minutes on 2 cores. This runs it as the README does, ROUNDS times into fresh run dirs,
and reads every figure from the run's own run.json (rows kept, dropped by reason, requests,
tokens), so what it prints is what the run really wrote. The wall time includes starting the
model server, as a user's run does; the ratio is to the 5-minute budget.

    uv run python bench/main_job.py [--rounds 1] [--config examples/main.toml]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 300.0
REPO = Path(__file__).resolve().parent.parent


def one_run(config: Path, out: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bashgym", "run", str(config), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    wall = time.perf_counter() - started
    if not (out / "run.json").is_file():
        sys.exit(f"the run wrote no run.json (exit {done.returncode}):\n{done.stderr[-2000:]}")
    run = json.loads((out / "run.json").read_text())
    return {"wall_s": wall, "exit": done.returncode, "run": run}


def main() -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--config", type=Path, default=REPO / "examples" / "main.toml")
    args = parser.parse_args()
    config = args.config.resolve()
    shown = config.relative_to(REPO) if config.is_relative_to(REPO) else config
    print(f"cpus: {os.cpu_count()}  config: {shown}")
    print(
        f"{'round':>5} {'wall s':>7} {'exit':>4} {'asked':>5} {'kept':>4} {'keep %':>6} "
        f"{'rows/min':>8} {'requests':>8} {'in tok':>7} {'out tok':>7} {'/budget':>7}"
    )
    kept_total = asked_total = 0
    wall_total = 0.0
    with tempfile.TemporaryDirectory(prefix="bashgym-main-job-") as tmp:
        for n in range(1, args.rounds + 1):
            got = one_run(args.config, Path(tmp) / f"run-{n}")
            counts, usage = got["run"]["counts"], got["run"]["usage_by_model"]
            asked, kept = counts["requested"], counts["kept"]
            requests = sum(u["requests"] for u in usage.values())
            tokens_in = sum(u["input_tokens"] for u in usage.values())
            tokens_out = sum(u["output_tokens"] for u in usage.values())
            kept_total, asked_total, wall_total = (
                kept_total + kept,
                asked_total + asked,
                wall_total + got["wall_s"],
            )
            print(
                f"{n:>5} {got['wall_s']:>7.1f} {got['exit']:>4} {asked:>5} {kept:>4} "
                f"{100 * kept / asked:>6.0f} {60 * kept / got['wall_s']:>8.2f} {requests:>8} "
                f"{tokens_in:>7} {tokens_out:>7} {got['wall_s'] / BUDGET_S:>7.2f}"
            )
            for reason, k in sorted(counts["dropped"].items(), key=lambda kv: -kv[1]):
                print(f"        dropped {k}: {reason}")
    print(
        f"all: {kept_total}/{asked_total} kept ({100 * kept_total / asked_total:.0f}%), "
        f"{60 * kept_total / wall_total:.2f} rows/min, mean wall {wall_total / args.rounds:.0f} s "
        f"= {wall_total / args.rounds / BUDGET_S:.2f}x the {BUDGET_S:.0f} s budget"
    )


if __name__ == "__main__":
    main()
