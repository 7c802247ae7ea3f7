"""Code graph + structural pairs throughput beside bare `ast.parse` + `ast.walk` of the same files.

Why: the `code-repo` source parses every file of every repository it is given, and the
`code-graph-pairs` pipeline turns the graph into triplets. Parsing is the floor of that cost:
CPython's own `ast.parse` plus one `ast.walk` over each tree is the least any ast-based graph
builder can do. The target: graph plus structural pairs at >= 70% of the bare rate in one
process, and >= 1.7x the bare one-process rate with two processes.

Set-up (every figure from one run of this script, on the same files):
- the corpus: every `.py` file under `--root` (default: this Python's standard library,
  `site-packages` and hidden folders left out), read from disk by each measurement;
- `bare`: `ast.parse(bytes)` and `ast.walk` over the tree, file by file, in one process;
- `bare x2`: the same split over two spawned processes (how well this machine runs two
  processes at all: on a busy or one-core machine no code can reach 2x);
- `graph`: `build_graph()` (parse, nodes, signatures, sources, references, then resolution
  across the repository) and `structural_pairs()` (every pair type with its hard negative);
- `graph x2`: the same with `workers=2`: two processes in all, the calling one and one
  spawned worker, share the parsing (each takes the next chunk of files when it is free) and
  then each resolves the calls and imports of the files it parsed; the index they resolve
  against and the pairs are made in the calling one. Like `bare x2`, no more than two
  processes ever work at once.
Each measurement runs in a fresh child process, so its peak memory (ru_maxrss; worker
processes listed apart) is its own and no cache is warm from another; the modes take turns
within each repeat, and the median of `--repeats` is shown with the min-max. The load average
is printed: other work on the machine slows every mode, and the ratios are the figures to read.

    uv run python bench/code_graph.py [--root DIR] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

MODES = ("bare", "bare x2", "graph", "graph x2")
TARGET_ONE, TARGET_TWO = 0.70, 1.7


def corpus(root: Path) -> list[str]:
    from bashgym_pipelines_code_graph.build import walk_sources

    return [f for f in walk_sources(root) if f.endswith(".py")]


def bare_file(path: str) -> tuple[int, int]:
    """(lines, ast nodes) of one file; (lines, 0) when it does not parse."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.count(b"\n")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return lines, 0
    return lines, sum(1 for _ in ast.walk(tree))


def run_bare(root: Path, files: list[str], workers: int) -> dict:
    paths = [str(root / f) for f in files]
    started = time.perf_counter()
    if workers == 1:
        results = [bare_file(p) for p in paths]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("spawn")
        chunk = max(1, len(paths) // (workers * 16))
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            results = list(pool.map(bare_file, paths, chunksize=chunk))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "lines": sum(r[0] for r in results),
        "nodes": sum(r[1] for r in results),
        "pairs": 0,
    }


def run_graph(root: Path, files: list[str], workers: int) -> dict:
    from bashgym_pipelines_code_graph.build import build_graph
    from bashgym_pipelines_code_graph.pairs import structural_pairs

    started = time.perf_counter()
    built = build_graph("corpus", root, files, workers=workers)
    pairs = structural_pairs(built.graph, seed=0)
    seconds = time.perf_counter() - started
    lines = 0
    for f in files:
        with open(root / f, "rb") as fh:
            lines += fh.read().count(b"\n")
    return {
        "seconds": seconds,
        "lines": lines,
        "nodes": len(built.graph.nodes),
        "edges": built.graph.edge_count(),
        "pairs": len(pairs),
        "failed_files": len(built.failed),
    }


def child(mode: str, root: Path) -> None:
    files = corpus(root)
    workers = 2 if mode.endswith("x2") else 1
    result = (run_bare if mode.startswith("bare") else run_graph)(root, files, workers)
    result["files"] = len(files)
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["worker_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(result))


def measure(mode: str, root: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--root", str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(os.__file__).parent)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.root)
        return
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    for repeat in range(args.repeats):
        order = MODES if repeat % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            runs[mode].append(measure(mode, args.root))
            print(f"  repeat {repeat + 1} {mode:<9} {runs[mode][-1]['seconds']:.2f} s", flush=True)
    first = runs["bare"][0]
    print(
        f"\ncorpus: {args.root} — {first['files']} files, {first['lines']:,} lines; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    rate = {m: median(runs[m], "lines") / median(runs[m], "seconds") for m in MODES}
    print(
        f"{'mode':<9} {'seconds (min-max)':>22} {'lines/s':>10} {'nodes/s':>10} "
        f"{'pairs/s':>10} {'peak MB':>9} {'workers MB':>10}"
    )
    for mode in MODES:
        rs = runs[mode]
        secs = [r["seconds"] for r in rs]
        s = median(rs, "seconds")
        print(
            f"{mode:<9} {s:>8.2f} ({min(secs):.2f}-{max(secs):.2f}) {rate[mode]:>10,.0f} "
            f"{median(rs, 'nodes') / s:>10,.0f} {median(rs, 'pairs') / s:>10,.0f} "
            f"{median(rs, 'peak_mb'):>9,.0f} {median(rs, 'worker_peak_mb'):>10,.0f}"
        )
    graph = runs["graph"][0]
    print(
        f"\ngraph: {graph['nodes']:,} nodes, {graph['edges']:,} edges, {graph['pairs']:,} "
        f"pairs, {graph['failed_files']} files failed to parse (nodes/s above: graph nodes for "
        "graph modes, ast nodes for bare modes)"
    )
    ratios = {
        "graph / bare (1 process)": rate["graph"] / rate["bare"],
        "graph x2 / bare (1 process)": rate["graph x2"] / rate["bare"],
        "graph x2 / graph": rate["graph x2"] / rate["graph"],
        "bare x2 / bare (this machine's 2-process scaling)": rate["bare x2"] / rate["bare"],
    }
    targets = {"graph / bare (1 process)": TARGET_ONE, "graph x2 / bare (1 process)": TARGET_TWO}
    for name, value in ratios.items():
        target = targets.get(name)
        verdict = (
            ""
            if target is None
            else f"  (target >= {target}: " + ("met)" if value >= target else "NOT met)")
        )
        print(f"  {name:<52} {value:5.2f}{verdict}")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": runs, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
