"""Code executions/s: csv-triangulation's warm sandbox pool against a fresh sandboxed process per
run, on a pandas group-by over a 1 MB CSV, every limit on.

Why: a triangulated question costs a gold run and N consistency runs of several code cells
each, so cell execution is on every episode's critical path. A fresh process per cell pays for
the interpreter, `import pandas` and parsing the CSV every time (measured ~2 runs/s); a warm
worker pays them once. Targets: warm >= 50x cold, and >= 80 runs/s per warm sandboxed worker.

Methods, side by side in one run, in the same environment (bubblewrap where available, else
local; named in the output), with the same CSV and cell:
- `cold`: each run is `session.run("python script.py")` in a fresh session process: the
  environment's own limits (CPU, file size, memory, processes, timeout), `import pandas`,
  `pd.read_csv`, the group-by, print;
- `warm`: one warm worker (`SandboxPool` of size 1, limits per cell: CPU, wall clock, memory,
  file size, output and answer size), one episode, N cells of the group-by;
- `warm, episode per run`: the same worker, a new episode (a fork of the worker: the exact
  reset between episodes) for every run;
- `warm, unsandboxed`: the worker started directly, no environment around it (the reference
  the issue quotes: ~108 runs/s).
Only the runs are timed; starting the pool (imports, CSV load) is reported apart. Each method
runs `--repeats` times; the median runs/s is shown with the min-max. On a busy machine (the load
average is printed) read the ratios: both sides are measured in the same minutes.

    uv run python bench/csv_sandbox.py [--runs 300] [--cold-runs 8] [--rows 24000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

CELL = "result = df.groupby('region')['revenue'].mean()"
TARGET_RATIO, TARGET_WARM = 50.0, 80.0


def make_csv(path: Path, rows: int) -> int:
    """A deterministic sales table; returns its size in bytes."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "order_id": np.arange(100_000, 100_000 + rows),
            "region": rng.choice(["North", "South", "East", "West", "Central"], rows),
            "product": rng.choice([f"p{i:02d}" for i in range(40)], rows),
            "units": rng.integers(1, 50, rows),
            "price": rng.choice([2.5, 4.0, 9.99, 12.5, 19.9], rows),
            "date": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, rows), "D"),
        }
    )
    frame["revenue"] = (frame.units * frame.price).round(2)
    frame.to_csv(path, index=False)
    return path.stat().st_size


async def timed(runs: int, one: Callable[[], Awaitable[Any]]) -> float:
    """Runs/s of `runs` calls of `one`, each checked by the caller's `one`."""
    started = time.perf_counter()
    for _ in range(runs):
        await one()
    return runs / (time.perf_counter() - started)


def check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"bench: a {what} run did not do the work; stopping")


async def warm_rates(pool: Any, runs: int) -> tuple[float, float]:
    async with pool.episode() as episode:

        async def cell() -> None:
            check((await episode.run(CELL)).status == "ok", "warm")

        in_one = await timed(runs, cell)

    async def fresh_episode() -> None:
        async with pool.episode() as episode:
            check((await episode.run(CELL)).status == "ok", "episode-per-run")

    return in_one, await timed(max(runs // 3, 10), fresh_episode)


async def cold_rate(session: Any, folder: Path, csv: Path, runs: int) -> float:
    data = folder / csv.name
    data.write_bytes(csv.read_bytes())  # bubblewrap hides the host's /tmp: the CSV goes inside
    script = folder / "cell.py"
    script.write_text(
        f"import pandas as pd\ndf = pd.read_csv({str(data)!r})\n{CELL}\nprint(len(result))\n"
    )
    command = f"{sys.executable} -I {script}"

    async def cell() -> None:
        done = await session.run(command, timeout=120)
        check(done.ok and done.output.strip() == "5", f"cold ({done.reason}: {done.output[-300:]})")

    return await timed(runs, cell)


async def unsandboxed_rate(csv: Path, folder: Path, runs: int) -> float:
    from bashgym_pipelines_csv_triangulation.options import SandboxOptions
    from bashgym_pipelines_csv_triangulation.pool import SandboxPool

    class Direct:
        """An environment that runs the worker as it is: no isolation, no limits of its own."""

        Options = SandboxOptions

        def open(self, workspace: Path, options: Any) -> Any:
            from contextlib import asynccontextmanager

            from bashgym_sandbox import Workspace

            from bashgym.contracts import EnvironmentSession

            class Session(EnvironmentSession):
                name = "none"

                async def run(self, command: str, *, timeout: float | None = None) -> Any:
                    from bashgym_procs import run

                    return await run(["bash", "-c", command], cwd=workspace, timeout=timeout)

                def argv(self, argv: Any) -> tuple[list[str], dict[str, str]]:
                    return list(argv), {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}

            @asynccontextmanager
            async def session() -> Any:
                yield Session(Workspace(workspace))

            return session()

    options = SandboxOptions(workers=1, preload=["pandas", "numpy"])
    pool = SandboxPool(
        Direct(), None, folder, csv=csv, limits=options.worker_limits(), size=1,  # type: ignore[arg-type]
        preload=options.preload,
    )  # fmt: skip
    async with pool:
        return (await warm_rates(pool, runs))[0]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} runs/s  ({min(values):.1f}-{max(values):.1f})"


async def main(args: argparse.Namespace) -> int:
    from bashgym_pipelines_csv_triangulation.options import SandboxOptions
    from bashgym_pipelines_csv_triangulation.sandbox import choose, make_pool

    from bashgym.plugins import PluginHost

    folder = Path(tempfile.mkdtemp(prefix="bench-csv-sandbox-"))
    csv = folder / "sales.csv"
    size = make_csv(csv, args.rows)
    print(f"CSV: {args.rows} rows, {size / 1e6:.2f} MB; cell: {CELL}")
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    options = SandboxOptions(workers=1, preload=["pandas", "numpy"])
    try:
        chosen = choose(PluginHost().registry, options)
    except ValueError as exc:  # InputError: no environment can run here
        print(f"no sandboxed figures: {exc}")
        chosen = None
    rates: dict[str, list[float]] = {"cold": [], "warm": [], "episode": [], "unsandboxed": []}
    started = time.perf_counter()
    if chosen is not None:
        print(f"environment: {chosen.name}" + (f" ({chosen.note})" if chosen.note else ""))
        limits = ", ".join(f"{k}={v}" for k, v in options.worker_limits().items())
        print(f"warm limits per cell: {limits}; environment limits: its defaults")
        (folder / "cold").mkdir()
        async with (
            make_pool(chosen, options, folder / "pool", csv) as pool,
            chosen.environment.open(folder / "cold", chosen.options) as session,
        ):
            print(f"warm worker start: {time.perf_counter() - started:.2f} s (once per pool)")
            for _ in range(args.repeats):
                warm, episode = await warm_rates(pool, args.runs)
                rates["warm"].append(warm)
                rates["episode"].append(episode)
                rates["cold"].append(await cold_rate(session, folder / "cold", csv, args.cold_runs))
    for _ in range(args.repeats):
        rates["unsandboxed"].append(await unsandboxed_rate(csv, folder / "direct", args.runs))
    print()
    labels = {
        "cold": "cold: fresh sandboxed process per run",
        "warm": "warm: one sandboxed worker, one episode",
        "episode": "warm: one sandboxed worker, episode per run",
        "unsandboxed": "warm: one worker, unsandboxed",
    }
    for key, label in labels.items():
        if rates[key]:
            print(f"{label:<46} {spread(rates[key])}")
    if not rates["warm"]:
        return 0
    warm, cold = statistics.median(rates["warm"]), statistics.median(rates["cold"])
    episode = statistics.median(rates["episode"])
    print()
    print(f"warm / cold:                      {warm / cold:7.1f}x  (target >= {TARGET_RATIO:g}x)")
    print(f"warm episode-per-run / cold:      {episode / cold:7.1f}x")
    bare = statistics.median(rates["unsandboxed"])
    print(f"warm sandboxed / unsandboxed:     {warm / bare:7.2f}")
    print(f"warm sandboxed runs/s per worker: {warm:7.1f}   (target >= {TARGET_WARM:g})")
    met = warm / cold >= TARGET_RATIO and warm >= TARGET_WARM
    print("targets met" if met else "TARGETS NOT MET")
    return 0 if met or args.quick else 1  # tiny sizes measure nothing worth a verdict


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=300, help="warm runs per repeat")
    parser.add_argument("--cold-runs", type=int, default=8, help="cold runs per repeat")
    parser.add_argument("--rows", type=int, default=24_000, help="CSV rows (24000: ~1 MB)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (CI): it runs end to end; targets shown, not judged",
    )
    if not sys.platform.startswith("linux"):
        print("bench/csv_sandbox.py: the warm worker needs Linux (fork, memfd, /proc); skipped")
        raise SystemExit(0)
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.runs, parsed.cold_runs, parsed.rows, parsed.repeats = 3, 1, 200, 1
    raise SystemExit(asyncio.run(main(parsed)))
