"""What a sandbox costs per command: `bash -c true` through bashgym_procs.run alone, then in a
local session and in a bubblewrap session, measured side by side in one process, plus the cost
of opening and closing a session (a cgroup made and removed). Prints ratios to the bare run.

    uv run python bench/command_overhead.py [ROUNDS]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bashgym_environments_bubblewrap import BubblewrapEnvironment, why_not
from bashgym_environments_local import LocalEnvironment
from bashgym_procs import run


async def per_command(environment, workspace: Path, rounds: int) -> float:
    async with environment.open(workspace, environment.Options()) as session:
        await session.run("true")  # warm: probes and caches are not the steady cost
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            done = await session.run("true")
            times.append(time.perf_counter() - started)
            assert done.ok, done
    return statistics.median(times)


async def bare(workspace: Path, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        done = await run(["bash", "-c", "true"], cwd=workspace)
        times.append(time.perf_counter() - started)
        assert done.ok, done
    return statistics.median(times)


async def open_close(environment, workspace: Path, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        async with environment.open(workspace, environment.Options()):
            pass
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main(rounds: int) -> None:
    environments = {"local": LocalEnvironment()}
    if why_not() is None:
        environments["bubblewrap"] = BubblewrapEnvironment()
    else:
        print(f"bubblewrap left out: {why_not()}")
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch)
        base = await bare(workspace, rounds)
        print(f"bash -c true, median of {rounds}: bare {base * 1000:.1f} ms")
        for name, environment in environments.items():
            cmd = await per_command(environment, workspace, rounds)
            session = await open_close(environment, workspace, max(rounds // 3, 3))
            print(
                f"  {name:<10} per command {cmd * 1000:6.1f} ms = {cmd / base:4.1f}x bare; "
                f"open+close {session * 1000:6.1f} ms"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
