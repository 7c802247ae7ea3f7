"""Benchmark: Claude Code transcripts to normalized Traces, against orjson and DataDesigner.

Why: the claude-code source must keep up with a user's whole `~/.claude/projects` (gigabytes)
on a laptop, at >= 200 MB/s with peak RSS under 300 MiB that stays flat as the corpus grows. The
only honest way to say that is to measure, side by side in one run on the same files:

- `orjson`: bare `orjson.loads` of every line of every file (the ceiling for any parser here);
- `ours`: `ClaudeCodeSource().open(...)` in one process (`workers=1`: the parser's own speed),
  every Trace built (subagents attached) and dropped;
- `datadesigner`: DataDesigner's `AgentRolloutSeedReader` for
  `AgentRolloutSeedSource(format=CLAUDE_CODE, path=...)`, read batch by batch the way its
  seed column generator reads it (`create_batch_reader`);
- `run`: the whole command a user types, `bashgym run -s claude-code -k nemo-jsonl` (start-up,
  scrubbing, the sink's train/val JSONL and manifest, run.json), timed from its start to its
  exit, after one untimed run of a single session in the same HOME (as a user's runs after
  their first: plugin index and scrubber caches built), with the source's default workers
  (from 64 MB up, one per CPU beside the run's own process, at most 2); its items
  are the JSONL lines it wrote, its floor is not measured (shown as 0), its CPU time counts
  the workers', its peak RSS is its largest process's and `tree` the most its processes held
  together (sampled every 50 ms).

Each method runs in its own subprocess (so peak RSS, `ru_maxrss` of that process, is its own),
`--repeat` times, interleaved, imports untimed (`floor` is the RSS after them); the table shows
the best wall-clock MB/s, the CPU-time MB/s of that run (steadier on a busy machine) and the
largest peak RSS. The corpus is generated deterministically into a temp dir
(bench/_claude_corpus.py) from the real recording's line shapes.
Run: `uv run python bench/ingest_claude_code.py [--sizes 50,250,1000] [--skip-dd-above MB]
[--methods run]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

METHODS = ("orjson", "ours", "datadesigner", "run")


# -- workers (run in a child process) ---------------------------------------------------------


def _setup_orjson(_: argparse.Namespace) -> Callable[[Path], int]:
    import orjson

    def work(root: Path) -> int:
        lines = 0
        for path in sorted(root.rglob("*.jsonl")):
            with open(path, "rb") as handle:
                for raw in handle:
                    orjson.loads(raw)
                    lines += 1
        return lines

    return work


def _setup_ours(_: argparse.Namespace) -> Callable[[Path], int]:
    from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

    from bashgym.contracts import RunContext
    from bashgym.settings import Settings

    run = RunContext(run_dir=Path(tempfile.gettempdir()), settings=Settings())

    def work(root: Path) -> int:
        traces = 0
        options = ClaudeCodeOptions(path=str(root), workers=1)  # one core: the parser's speed
        for _trace in ClaudeCodeSource().open(options, run):
            traces += 1
        if run.counts.get("source.bad_lines"):
            raise SystemExit(f"unexpected bad lines: {run.notes[:3]}")
        return traces

    return work


def _setup_datadesigner(args: argparse.Namespace) -> Callable[[Path], int]:
    import logging

    import data_designer.config as dd
    from data_designer.engine.resources.seed_reader import AgentRolloutSeedReader
    from data_designer.engine.secret_resolver import PlaintextResolver

    logging.disable(logging.WARNING)

    def work(root: Path) -> int:
        source = dd.AgentRolloutSeedSource(format=dd.AgentRolloutFormat.CLAUDE_CODE, path=str(root))
        reader = AgentRolloutSeedReader()
        reader.attach(source, PlaintextResolver())
        batches = reader.create_batch_reader(
            batch_size=args.dd_batch, index_range=None, shuffle=False
        )
        rows = 0
        while True:
            try:
                batch = batches.read_next_batch()
            except StopIteration:
                break
            rows += len(batch.to_pandas())
        return rows

    return work


def _run_command(root: Path) -> None:
    """`bashgym run -s claude-code -k nemo-jsonl` in a child process, timed whole."""
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        out = Path(tmp) / "run"

        def command(source: Path, out: Path) -> list[str]:
            return [
                sys.executable, "-m", "bashgym", "run", "-s", "claude-code",
                "--set", f"source.path={source}", "-k", "nemo-jsonl", "--out", str(out), "--fresh",
            ]  # fmt: skip

        home, work = Path(tmp) / "home", Path(tmp) / "work"  # cwd apart from the cache's
        home.mkdir(), work.mkdir()  # `bashgym/` folder, which `python -m bashgym` would import
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home),
               "XDG_CACHE_HOME": str(home)}  # fmt: skip
        # untimed, in the same HOME, one run of a single session: the first command there
        # builds the plugin index (it imports every plugin once) and the scrubber's caches
        # (Hyperscan databases, detect-secrets' table); a user's runs after their first find
        # them built
        warm = command(min(root.rglob("*.jsonl")), Path(tmp) / "warm")
        subprocess.run(warm, capture_output=True, env=env, cwd=work, check=True)
        cmd = command(root, out)
        usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=work)
            tree = _tree_peak(proc)
            wall = time.perf_counter() - wall
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"bashgym run failed:\n{err.read()[-2000:].decode()}")
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
        items = sum(manifest["counts"].values())
    cpu = usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime
    peak = usage.ru_maxrss * 1024  # the largest child's (on a tiny corpus, the warm-up run's)
    print(json.dumps({"wall": wall, "cpu": cpu, "items": items, "peak": peak, "floor": 0,
                      "tree": tree}))  # fmt: skip


def _tree_peak(proc: subprocess.Popen[bytes]) -> int:
    """Wait for `proc`; the most RSS it and its children held together (polled every 50 ms)."""
    import psutil

    peak = 0
    while proc.poll() is None:
        total = 0
        try:
            procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            for p in procs:
                total += p.memory_info().rss
        except psutil.Error:
            pass  # it (or a child) ended between the listing and the reading
        peak = max(peak, total)
        time.sleep(0.05)
    return peak


def worker(method: str, root: Path, args: argparse.Namespace) -> None:
    """Import what the method needs (untimed; `floor` is the RSS after that), then time it."""
    import psutil

    if method == "run":
        _run_command(root)
        return

    setup = {"orjson": _setup_orjson, "ours": _setup_ours, "datadesigner": _setup_datadesigner}
    work = setup[method](args)
    floor = psutil.Process().memory_info().rss
    wall, cpu = time.perf_counter(), time.process_time()
    items = work(root)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"wall": wall, "cpu": cpu, "items": items, "peak": peak, "floor": floor}))


# -- driver -----------------------------------------------------------------------------------


def corpus_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl"))


def run_child(method: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        method,
        "--path",
        str(root),
        "--dd-batch",
        str(args.dd_batch),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{method} failed on {root}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,250", help="Corpus sizes in MB (comma-separated).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per method; best is shown.")
    parser.add_argument(
        "--skip-dd-above",
        type=float,
        default=None,
        metavar="MB",
        help="Do not run DataDesigner's reader on corpora larger than this.",
    )
    parser.add_argument("--dd-batch", type=int, default=100, help="DataDesigner batch size.")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help=f"Which to run (of {', '.join(METHODS)})."
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default=None, help="Where to generate (default: a temp dir).")
    parser.add_argument("--keep", action="store_true", help="Keep the generated corpora.")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, Path(args.path), args)
        return

    sys.path.insert(0, str(Path(__file__).parent))
    from _claude_corpus import generate

    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-claude-code-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, corpus in {base}")
    results: list[tuple[float, int, dict[str, dict[str, Any]]]] = []
    try:
        for size in sizes:
            root = base / f"projects-{size:g}MB"
            if not root.exists():
                started = time.perf_counter()
                generate(root, int(size * 1_000_000), seed=args.seed)
                print(f"generated {size:g} MB in {time.perf_counter() - started:.1f}s")
            nbytes = corpus_bytes(root)
            dd_ok = args.skip_dd_above is None or size <= args.skip_dd_above
            chosen = args.methods.split(",")
            methods = [m for m in METHODS if m in chosen and (m != "datadesigner" or dd_ok)]
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.repeat):
                for method in methods:
                    out = run_child(method, root, args)
                    prev = best.get(method)
                    if prev is None or out["wall"] < prev["wall"]:
                        best[method] = {**out, "peak": max(out["peak"], (prev or out)["peak"])}
                        if "tree" in out:
                            best[method]["tree"] = max(out["tree"], (prev or out)["tree"])
                    else:
                        prev["peak"] = max(prev["peak"], out["peak"])
                        if "tree" in out:
                            prev["tree"] = max(prev["tree"], out["tree"])
            _print_rows(size, nbytes, best, header=not results)
            results.append((size, nbytes, best))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


def _print_rows(size: float, nbytes: int, best: dict[str, dict[str, Any]], header: bool) -> None:
    mib = 1024 * 1024
    if header:
        print(
            f"\n{'size':>8} {'method':<13} {'MB/s wall':>10} {'MB/s cpu':>9} {'peak RSS':>10} "
            f"{'(floor)':>8} {'items':>7}"
        )
    for method in METHODS:
        r = best.get(method)
        if r is None:
            print(f"{size:>6g}MB {method:<13} {'skipped':>10}")
            continue
        print(
            f"{size:>6g}MB {method:<13} {nbytes / r['wall'] / 1e6:>10.0f} "
            f"{nbytes / r['cpu'] / 1e6:>9.0f} {r['peak'] / mib:>7.0f}MiB "
            f"{r['floor'] / mib:>6.0f}Mi {r['items']:>7}"
            + (f"  (tree {r['tree'] / mib:.0f} MiB)" if "tree" in r else "")
        )
    if "ours" not in best or "orjson" not in best:
        return
    ours = best["ours"]
    line = f"{'':>8} ratios: ours/orjson {best['orjson']['wall'] / ours['wall']:.2f} (wall) "
    line += f"{best['orjson']['cpu'] / ours['cpu']:.2f} (cpu)"
    if "run" in best:
        line += f"; whole command/orjson {best['orjson']['wall'] / best['run']['wall']:.2f} (wall)"
    if "datadesigner" in best:
        dd = best["datadesigner"]
        line += f"; ours/DataDesigner {dd['wall'] / ours['wall']:.2f} (wall) "
        line += f"{dd['cpu'] / ours['cpu']:.2f} (cpu)"
    print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
