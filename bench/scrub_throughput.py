"""Benchmark: secret scrubbing on transcript rows, beside reading those rows.

Why: scrubbing runs over every row of a run before anything else sees it, and on transcript
runs it used to be the slowest step (250 MB of Claude Code sessions: 9.6 s of 15 s). The only
honest way to say how much faster it is now is to measure, side by side in one run on the same
rows:

- `read`: the claude-code source turning the corpus into trace rows (a DataFrame), alone;
- `scrub`: `Redactor().frame(rows)` (what the engine runs), for each variant:
  `before` — the scrubber as it was before the prefilter (loaded from git, `--before REV`;
  skipped where there is no git history), `hyperscan`, `re2`, `python` — the current scrubber
  with each prefilter backend that imports here, and `processes` — the current scrubber in
  `--workers` forked processes, each taking a slice of the rows (an option this bench measures;
  the plugin itself scrubs in one process);
- `read+scrub`: both, timed as one step, as a run does them.

MB/s is corpus bytes (the JSONL files on disk) per second of wall time, and per second of CPU
time (this process and its finished children: steadier on a shared machine). The corpus is generated
deterministically (bench/_claude_corpus.py); `--plant-kb` plants one secret line (a key, a URL
password, a YAML password, a bearer header, ...) per that many KB of trace text, so redaction is
measured too, and the table shows how many each variant redacted (the current backends must all
agree; `before` misses some shapes). A variant's one-off setup (compiling its patterns) is timed
apart, not in MB/s. `--repeat` keeps the best of N.
A second corpus, `mixed` (`--mixed-mb`, default the smallest of `--sizes`, 0 to skip), is what
a coding transcript's tool results hold besides JSON: source, docs and config files (this
Python's own stdlib and site-packages: .py, .md, .json, .yaml, .toml, .cfg, .ini, .txt, .js,
.sh, read in path order) and raw transcript JSONL lines, half and half, each scrubbed as one
string with `Redactor().text` (what the engine runs on a text cell). More name gates (`key=`,
`token`, `password` in code) fire per MB there than in the transcript rows.
Run: `uv run python bench/scrub_throughput.py [--sizes 50,250] [--mixed-mb 20] [--repeat 2]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

BEFORE_REV = "aab6c7e"  # the last commit with the scrubber that had no prefilter
DETECT = "plugins/scrubbers/secrets/bashgym_scrubbers_secrets/detect.py"
REPO = Path(__file__).resolve().parent.parent


def read_rows(root: Path) -> Any:
    import pandas as pd
    from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

    from bashgym.contracts import RunContext
    from bashgym.records import trace_to_row
    from bashgym.settings import Settings

    run = RunContext(run_dir=Path(tempfile.gettempdir()), settings=Settings())
    traces = ClaudeCodeSource().open(ClaudeCodeOptions(path=str(root)), run)
    return pd.DataFrame([trace_to_row(t) for t in traces])


def _tok(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def planted_line(rng: random.Random) -> str:
    """A secret the way a transcript shows it; no quote or backslash, so it sits in JSON text
    unchanged."""
    shapes = [
        lambda: f"OPENAI_API_KEY=sk-proj-{_tok(rng, 48)}",
        lambda: f"export GITHUB_TOKEN=ghp_{_tok(rng, 36)}",
        lambda: f"aws_access_key_id = AKIA{_tok(rng, 16).upper()}",
        lambda: f"aws_secret_access_key = {_tok(rng, 40)}",
        lambda: f"DATABASE_URL=postgres://admin:S3cr3t!{_tok(rng, 6)}@db.internal:5432/app",
        lambda: f"  password: P4ss#{_tok(rng, 10)}",
        lambda: f"Authorization: Bearer {_tok(rng, 40)}",
        lambda: f"npm_{_tok(rng, 36)} whsec_{_tok(rng, 32)}",
    ]
    return rng.choice(shapes)()


def plant(rows: Any, every_kb: float, seed: int) -> tuple[Any, int]:
    """The rows with one planted line per `every_kb` KB of trace text (after a space in a
    string value, where text sits)."""
    if every_kb <= 0:
        return rows, 0
    rng, planted, out = random.Random(seed), 0, []
    for text in rows["trace"]:
        parts, step, i = [], int(every_kb * 1000), 0
        while True:
            j = text.find(" value ", i + step)
            if j == -1:
                break
            parts += [text[i:j], " ", planted_line(rng)]
            planted += 1
            i = j
        out.append("".join(parts) + text[i:])
    rows = rows.copy()
    rows["trace"] = out
    return rows, planted


def load_before(rev: str) -> Any | None:
    """The `Scrubber` class of `detect.py` at `rev`, or None without git history."""
    try:
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:{DETECT}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp(prefix="scrub-before-")) / "scrub_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("scrub_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["scrub_before"] = module
    spec.loader.exec_module(module)
    return module.Scrubber


# -- processes: forked workers scrub slices of the parent's rows (shared, not pickled) ----------

_ROWS: Any = None


def _scrub_slice(bounds: tuple[int, int]) -> tuple[dict[tuple[int, str], Any], dict[str, int]]:
    from bashgym_scrubbers_secrets import Redactor

    scrubber = Redactor()
    lo, hi = bounds
    part = _ROWS.iloc[lo:hi]
    new, _ = scrubber.frame(part)
    changed = {}
    for column in part.columns:
        for i, (a, b) in enumerate(zip(part[column].tolist(), new[column].tolist(), strict=True)):
            if a != b:  # arrow-backed columns hand out new str objects: compare values
                changed[(lo + i, column)] = b
    return changed, dict(scrubber.counts)


def scrub_in_processes(rows: Any, workers: int) -> tuple[Any, dict[str, int]]:
    global _ROWS
    import multiprocessing

    _ROWS = rows
    step = max(1, -(-len(rows) // (workers * 4)))
    bounds = [(i, min(i + step, len(rows))) for i in range(0, len(rows), step)]
    out, counts = rows.copy(), {}
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        for changed, part_counts in pool.map(_scrub_slice, bounds):
            for (i, column), value in changed.items():
                out.iat[i, out.columns.get_loc(column)] = value
            for k, v in part_counts.items():
                counts[k] = counts.get(k, 0) + v
    _ROWS = None
    return out, counts


# -- variants ----------------------------------------------------------------------------------


def variants(args: argparse.Namespace) -> dict[str, Callable[[], Callable[[Any], Any]]]:
    """name -> setup() returning scrub(rows) -> (rows, counts)."""
    from bashgym_scrubbers_secrets import Redactor
    from bashgym_scrubbers_secrets.prefilter import available

    out: dict[str, Callable[[], Callable[[Any], Any]]] = {}
    before = load_before(args.before) if "before" in args.variants else None
    if before is not None:

        def setup_before() -> Callable[[Any], Any]:
            before().text("warm up AKIA" + "A" * 16)

            def scrub(rows: Any) -> Any:
                scrubber = before()
                return scrubber.frame(rows)[0], dict(scrubber.counts)

            return scrub

        out["before"] = setup_before
    elif "before" in args.variants:
        print(f"before: skipped (no git history with {args.before}:{DETECT})")
    for backend in available():
        if backend not in args.variants:
            continue

        def setup(backend: str = backend) -> Callable[[Any], Any]:
            Redactor(backend=backend).text('{"a": "warm up the json path, password: x1y2z3"}')

            def scrub(rows: Any) -> Any:
                scrubber = Redactor(backend=backend)
                return scrubber.frame(rows)[0], dict(scrubber.counts)

            return scrub

        out[backend] = setup
    if "processes" in args.variants and args.workers > 1:
        if "fork" not in __import__("multiprocessing").get_all_start_methods():
            print("processes: skipped (no fork start method here)")
        else:

            def setup_processes() -> Callable[[Any], Any]:
                Redactor().text('{"a": "warm up, password: x1y2z3"}')  # forked workers inherit
                return lambda rows: scrub_in_processes(rows, args.workers)

            out[f"processes x{args.workers}"] = setup_processes
    return out


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, CPU s, result): the least wall time and the least CPU time of `repeat` calls,
    each its own minimum (on a shared machine the fastest wall run is often not the one other
    processes disturbed least). CPU time counts this process and its finished children (forked
    workers): steadier than wall time on a busy machine."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        times, started = os.times(), time.perf_counter()
        result = fn()
        wall, after = time.perf_counter() - started, os.times()
        cpu = sum(after[:4]) - sum(times[:4])
        best, best_cpu = min(best, wall), min(best_cpu, cpu)
    return best, best_cpu, result


def run_size(root: Path, args: argparse.Namespace) -> None:
    nbytes = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
    mb = nbytes / 1e6

    def read() -> Any:
        return plant(read_rows(root), args.plant_kb, args.seed)

    read()  # warm: the source's lazy imports and the page cache are not what is timed
    read_s, read_cpu, (rows, planted) = best_of(args.repeat, read)
    trace_mb = sum(len(t) for t in rows["trace"]) / 1e6
    print(
        f"\n{mb:.0f} MB corpus: {len(rows)} trace rows, {trace_mb:.0f} MB of trace JSON, "
        f"{planted} planted secret lines"
    )
    head = f"{'step':<24}{'setup s':>8}{'wall s':>8}{'MB/s':>8}{'CPU s':>8}{'MB/s':>8}"
    print(f"{head}{'redacted':>10}{'rows touched':>14}")

    def line(name: str, wall: float, cpu: float, setup: str = "", tail: str = "") -> None:
        # os.times() ticks at 10 ms: a small corpus can take no measurable CPU (or wall) time
        wall_rate, cpu_rate = (f"{mb / t:>8.1f}" if t > 0 else f"{'-':>8}" for t in (wall, cpu))
        print(f"{name:<24}{setup:>8}{wall:>8.2f}{wall_rate}{cpu:>8.2f}{cpu_rate}{tail}")

    line("read (source alone)", read_s, read_cpu)
    outputs = {}
    for name, setup in variants(args).items():
        setup_s, _, scrub = best_of(1, setup)
        scrub_s, scrub_cpu, (scrubbed, counts) = best_of(args.repeat, lambda s=scrub: s(rows))
        touched = int((rows["trace"] != scrubbed["trace"]).sum())
        outputs[name] = scrubbed
        tail = f"{sum(counts.values()):>10}{touched:>14}"
        line("scrub " + name, scrub_s, scrub_cpu, f"{setup_s:.2f}", tail)
        e2e_s, e2e_cpu, _ = best_of(args.repeat, lambda s=scrub: s(read()[0]))
        line("read+scrub " + name, e2e_s, e2e_cpu)
    current = [n for n in outputs if n != "before"]
    for name in current[1:]:
        same = outputs[name].equals(outputs[current[0]])
        print(f"{name} output == {current[0]} output: {same}")


_MIXED_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".txt")
_MIXED_SUFFIXES += (".js", ".sh")


def mixed_corpus(transcripts: Path, mb: float) -> list[str]:
    """Source/doc/config files of this Python's installation and transcript JSONL lines, about
    `mb` MB, half each, in a fixed order."""
    import sysconfig

    half = int(mb * 1_000_000 / 2)
    files: list[str] = []
    size = 0
    roots = sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]})
    for root in roots:
        for path in sorted(Path(root).rglob("*")):
            if size >= half:
                break
            if path.suffix not in _MIXED_SUFFIXES or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if 0 < len(text) <= 2_000_000:
                files.append(text)
                size += len(text.encode())
    lines: list[str] = []
    size = 0
    for path in sorted(transcripts.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if size >= half:
                break
            lines.append(line)
            size += len(line.encode())
    # interleaved, as a transcript mixes them
    out = []
    for i in range(max(len(files), len(lines))):
        out += files[i : i + 1] + lines[i : i + 1]
    return out


def run_mixed(texts: list[str], args: argparse.Namespace) -> None:
    from bashgym_scrubbers_secrets import Redactor
    from bashgym_scrubbers_secrets.prefilter import available

    mb = sum(len(t.encode()) for t in texts) / 1e6
    print(f"\nmixed corpus: {mb:.1f} MB in {len(texts)} strings (source/doc/config + JSONL)")
    print(f"{'step':<24}{'wall s':>8}{'MB/s':>8}{'CPU s':>8}{'MB/s':>8}{'redacted':>10}")
    for backend in available():
        if backend not in args.variants:
            continue
        Redactor(backend=backend).text('{"a": "warm up, password: x1y2z3"}')

        def scrub(backend: str = backend) -> Any:
            scrubber = Redactor(backend=backend)
            for text in texts:
                scrubber.text(text)
            return scrubber.counts

        wall, cpu, counts = best_of(args.repeat, scrub)
        rates = [f"{mb / t:>8.1f}" if t > 0 else f"{'-':>8}" for t in (wall, cpu)]
        name = f"scrub {backend}"
        print(f"{name:<24}{wall:>8.2f}{rates[0]}{cpu:>8.2f}{rates[1]}{sum(counts.values()):>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,250", help="Corpus sizes in MB, comma-separated.")
    parser.add_argument("--repeat", type=int, default=1, help="Keep the best of N runs.")
    parser.add_argument("--plant-kb", type=float, default=100, help="One secret per N KB; 0: none.")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument(
        "--variants",
        default="before,hyperscan,re2,python,processes",
        help="Which scrubbers to time, comma-separated.",
    )
    parser.add_argument("--before", default=BEFORE_REV, help="Git revision of the old scrubber.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mixed-mb",
        type=float,
        default=None,
        help="Size of the mixed corpus in MB (default: the smallest of --sizes); 0: skip.",
    )
    parser.add_argument("--dir", default=None, help="Where to generate (default: a temp dir).")
    parser.add_argument("--keep", action="store_true", help="Keep the generated corpora.")
    args = parser.parse_args()
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]

    sys.path.insert(0, str(Path(__file__).parent))
    from _claude_corpus import generate
    from bashgym_scrubbers_secrets.prefilter import available

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-scrub-"))
    base.mkdir(parents=True, exist_ok=True)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, prefilter backends here: "
        f"{', '.join(available())}; corpus in {base}"
    )
    try:
        for size in [float(s) for s in args.sizes.split(",") if s.strip()]:
            root = base / f"projects-{size:g}MB"
            if not root.exists():
                started = time.perf_counter()
                generate(root, int(size * 1_000_000), seed=args.seed)
                print(f"generated {size:g} MB in {time.perf_counter() - started:.1f}s")
            run_size(root, args)
        sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
        if args.mixed_mb is None:
            args.mixed_mb = min(sizes, default=0)
        if args.mixed_mb > 0:
            root = base / "projects-mixed"
            if not root.exists():
                generate(root, int(args.mixed_mb * 1_000_000 / 2) + 1, seed=args.seed)
            run_mixed(mixed_corpus(root, args.mixed_mb), args)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
