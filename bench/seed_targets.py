"""The seeds' own targets, measured through the `bashgym` CLI as a user runs it.

Targets (from the project's seed): 1,000 SFT rows generated from 50 traces in under 30 min, and
a 5-row preview in under 30 s, with a model that answers in a realistic time. The model here is
the scripted server (`bashgym_testing.ScriptedModelServer`, its default answers) with a fixed
latency per call (1 s by default) and 16 requests in parallel per model alias, so the figures
say what BashGym and DataDesigner add on top of the model's own time, on this machine.

What runs (each a real `bashgym` subprocess in an isolated HOME / XDG dirs, its cwd holding a
`bashgym.toml` that points the `default` and `judge` aliases at the scripted server with
`params = { max_parallel_requests = P }`):
- corpus: N Claude Code sessions copied from the real recorded transcripts in the repo
  (`examples/transcripts`, `plugins/sources/claude-code/tests/fixtures`), each copy under a
  fresh session id (the file name and every `sessionId`), so the source reads N traces;
- sft: `bashgym run -s claude-code --set source.path=CORPUS -p coding-agent-sft -n ROWS
  -k nemo-jsonl --top-up` (the traces are the seed; --top-up keeps generating until ROWS rows
  pass the judge and the ruff check);
- preview: `bashgym preview coding-agent-sft -s claude-code --set source.path=CORPUS -n 5`.
Before the timed commands, a warm-up does what a user's first commands leave behind: `bashgym
plugins` builds the plugin index cache and a 1-row preview compiles the modules (its time is
printed, not counted). Python caches compiled modules as a user's does, even on a box that
sets PYTHONDONTWRITEBYTECODE (`--no-bytecode` keeps that setting: a first run's cost).

For each: wall time, the model calls the server answered (all of them: the run's one-line
preflight per alias and DataDesigner's health checks included), the peak and mean number of
requests in flight, the CPU of the bashgym process (user + sys, from wait4, its children
included), and what BashGym adds beyond the model's own time: wall − calls × latency / P, the
wall time beyond what a model serving P calls at once must take (start-up, BashGym's and
DataDesigner's CPU, and the waits the columns' order imposes). The model's busy time (at least
one call in flight) and the idle time (none in flight) split the wall time the other way.

    uv run python bench/seed_targets.py                # full size: 1,000 rows from 50 traces
    uv run python bench/seed_targets.py --quick        # CI: tiny sizes, 50 ms, nothing judged
    uv run python bench/seed_targets.py --rows 200 --only sft --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Real recorded Claude Code sessions shipped in the repo (top-level session files only: a
# subagent file would add a trace of its own and blur the trace count).
SESSION_GLOBS = (
    (REPO / "examples" / "transcripts", "*/*.jsonl"),
    (REPO / "plugins" / "sources" / "claude-code" / "tests" / "fixtures", "cc_session_*.jsonl"),
    (REPO / "plugins" / "sources" / "claude-code" / "tests" / "fixtures", "minimal_*.jsonl"),
)
PIPELINE = "coding-agent-sft"
ALIASES = ("default", "judge")
KEY_ENV = "SEED_TARGETS_SCRIPTED_KEY"
TARGETS_S = {"sft": 30 * 60.0, "preview": 30.0}


# -- the scripted model, in its own process (never holding the measured process's GIL) -------


def serve(latency: float) -> None:
    """Run the scripted server until stdin closes; print its URL first, its counts last."""
    from bashgym_testing.server import ScriptedModelServer

    with ScriptedModelServer() as server:
        server.latency = latency
        print(server.openai_base_url, flush=True)
        sys.stdin.read()
        completions = server.completions
        checks = sum(1 for r in completions if r.last_user_text in ("Reply with OK.", "Hello!"))
        arrivals = sorted(r.timestamp for r in completions)
        print(
            json.dumps(
                {
                    "calls": len(completions),
                    "check_calls": checks,
                    **in_flight(arrivals, latency),
                    "errors": len(server.errors),
                }
            ),
            flush=True,
        )


def in_flight(arrivals: list[float], latency: float) -> dict[str, float]:
    """Peak and mean requests in flight, from arrival times: each call is held `latency` s
    (the server's own work is microseconds), so the peak is the most arrivals in any window of
    `latency` s and the mean is the busy time over the span from first arrival to last answer."""
    if not arrivals or latency <= 0:
        return {"peak_in_flight": 0, "mean_in_flight": 0.0, "model_busy_s": 0.0}
    peak, lo, busy, covered_to = 0, 0, 0.0, arrivals[0]
    for hi, t in enumerate(arrivals):
        while arrivals[lo] <= t - latency:
            lo += 1
        peak = max(peak, hi - lo + 1)
        # the union of [arrival, arrival + latency]: time with at least one call in flight
        busy += max(0.0, t + latency - max(t, covered_to))
        covered_to = max(covered_to, t + latency)
    span = arrivals[-1] + latency - arrivals[0]
    return {
        "peak_in_flight": peak,
        "mean_in_flight": len(arrivals) * latency / span,
        "model_busy_s": busy,
        "first_call_epoch": arrivals[0],
    }


class Server:
    """The `--serve` child: start it, read its URL, and on close its counts."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.proc.kill()
            raise SystemExit("the scripted model server did not start")

    def close(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        counts = json.loads(self.proc.stdout.readline())
        self.proc.wait(timeout=60)
        return counts


# -- the corpus and the user's environment ----------------------------------------------------


def base_sessions() -> list[Path]:
    """The real recorded sessions to copy, in a stable order."""
    found = sorted(p for root, pattern in SESSION_GLOBS for p in root.glob(pattern))
    if not found:
        raise SystemExit(f"no recorded Claude Code sessions found under {REPO}")
    return found


def build_corpus(root: Path, traces: int) -> Path:
    """`traces` session files under root/projects, copies of the recorded ones, each under a
    fresh (deterministic) session id in its file name and every line's `sessionId`."""
    bases = base_sessions()
    projects = root / "projects"
    for i in range(traces):
        base = bases[i % len(bases)]
        old = base.stem
        new = str(uuid.uuid5(uuid.NAMESPACE_URL, f"seed-targets/{i}"))
        text = base.read_text(encoding="utf-8").replace(old, new)
        folder = projects / f"-home-dev-{base.parent.name.strip('-') or 'project'}-{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{new}.jsonl").write_text(text, encoding="utf-8")
    return projects


def user_env(home: Path, own_cache: bool = True, bytecode: bool = True) -> tuple[dict, Path]:
    """An isolated user (HOME, XDG dirs, no outer BASHGYM_* variables); (env, project dir).
    `own_cache=False` keeps the outer XDG_CACHE_HOME (its plugin index is already built) and
    the environment's own compiled modules (see below).

    `bytecode`: Python caches compiled modules as a user's Python does. A box that sets
    PYTHONDONTWRITEBYTECODE makes every command compile ~1,300 modules from source (~6 s of
    CPU for a preview, measured); with `own_cache` the .pyc files go to a folder of the bench's
    own (PYTHONPYCACHEPREFIX), so the shared environment is left as it is; without it (--quick,
    CI) the environment's __pycache__ folders are used as they are (the test suite writes
    them): a fresh prefix made the first command compile everything again (~10 s of CPU)."""
    dirs = {name: home / name for name in ("home", "config", "cache", "data", "work")}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    outer_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASHGYM_")}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if own_cache:
            env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    env.update(
        {
            "HOME": str(dirs["home"]),
            "XDG_CONFIG_HOME": str(dirs["config"]),
            "XDG_CACHE_HOME": str(dirs["cache"]) if own_cache else outer_cache,
            "XDG_DATA_HOME": str(dirs["data"]),
            "NEMO_TELEMETRY_ENABLED": "false",  # no network here; a user may leave it on
            KEY_ENV: "scripted-key",
        }
    )
    return env, dirs["work"]


def point_models_at(project: Path, endpoint: str, parallel: int) -> None:
    """The project's bashgym.toml: every alias on the scripted server, `parallel` at once."""
    lines = []
    for alias in ALIASES:
        lines += [
            f"[models.{alias}]",
            'provider = "openai-compatible"',
            f'model = "scripted-{alias}"',
            f'endpoint = "{endpoint}"',
            f'api_key_env = "{KEY_ENV}"',
            f"params = {{ max_parallel_requests = {parallel} }}",
            "",
        ]
    (project / "bashgym.toml").write_text("\n".join(lines))


def bashgym_exe() -> str:
    exe = shutil.which("bashgym") or str(Path(sys.executable).with_name("bashgym"))
    if not Path(exe).exists():
        raise SystemExit("the bashgym command is not installed (run: uv sync)")
    return exe


# -- one measured command ---------------------------------------------------------------------


def timed(cmd: list[str], env: dict[str, str], cwd: Path, log: Path, limit: float) -> dict:
    """Run cmd (stdout to log, stderr beside it as .err); wall time, exit code and CPU (user +
    sys of it and its waited-for children). Killed after `limit` seconds."""
    with log.open("w") as out, log.with_suffix(".err").open("w") as err:
        start, epoch = time.perf_counter(), time.time()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        timer = threading.Timer(limit, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "start_epoch": epoch,
        "exit": proc.returncode,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }


def count_lines(folder: Path) -> int:
    return sum(
        1 for f in folder.glob("*.jsonl") for line in f.open(encoding="utf-8") if line.strip()
    )


def measure(
    kind: str, args: argparse.Namespace, user: tuple[dict[str, str], Path], work: Path, corpus: Path
) -> dict[str, Any]:
    """Run one target (`sft` or `preview`) as `user` (env, project dir), on a fresh server."""
    env, cwd = user
    exe = bashgym_exe()
    server = Server(args.latency)
    try:
        point_models_at(cwd, server.url, args.parallel)
        source = ["-s", "claude-code", "--set", f"source.path={corpus}"]
        if kind == "sft":
            out = cwd / "run-sft"
            cmd = [exe, "run", *source, "-p", PIPELINE, "-n", str(args.rows), "--top-up"]
            cmd += ["-k", "nemo-jsonl", "-o", str(out)]
        else:
            cmd = [exe, "preview", PIPELINE, *source, "-n", str(args.preview_rows), "--json"]
        log = work / f"{kind}.log"
        result = timed(cmd, env, cwd, log, args.limit)
    finally:
        model = server.close()
    result.update(model)
    result["command"] = " ".join(["bashgym", *cmd[1:]])
    if result["exit"] != 0:
        tail = (log.read_text(errors="replace") + log.with_suffix(".err").read_text())[-3000:]
        raise SystemExit(f"{kind}: exit {result['exit']} after {result['wall_s']:.0f} s:\n{tail}")
    if kind == "sft":
        summary = json.loads((out / "run.json").read_text())
        result["rows"] = count_lines(out / "nemo-jsonl")
        result["counts"] = summary.get("counts", {})
        result["timings_s"] = summary.get("timings_s", {})
    else:
        text = log.read_text(errors="replace")
        start = text.find("{")
        records = json.loads(text[start:]).get("records", []) if start >= 0 else []
        result["rows"] = len(records)
    result["model_time_s"] = result["calls"] * args.latency / args.parallel
    result["idle_s"] = result["wall_s"] - result["model_busy_s"]
    if "first_call_epoch" in result:
        result["to_first_call_s"] = result["first_call_epoch"] - result["start_epoch"]
    result["added_s"] = result["wall_s"] - result["model_time_s"]
    return result


def warm_up(args: argparse.Namespace, user: tuple[dict[str, str], Path], work: Path) -> float:
    """What a user's first commands leave behind, done before the clocks start: the plugin
    index cache (`bashgym plugins`) and compiled modules (a 1-row preview of the example seed,
    on a server of its own so its calls are not counted). Seconds taken."""
    env, cwd = user
    exe = bashgym_exe()
    server = Server(0.0)
    try:
        point_models_at(cwd, server.url, args.parallel)
        wall = timed([exe, "plugins"], env, cwd, work / "warm-up.log", 600)["wall_s"]
        cmd = [exe, "preview", PIPELINE, "-n", "1", "--json"]
        wall += timed(cmd, env, cwd, work / "warm-up-preview.log", 600)["wall_s"]
    finally:
        server.close()
    return wall


# -- report -----------------------------------------------------------------------------------


def print_table(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\nscripted model: {args.latency:g} s a call, {args.parallel} in parallel per alias; "
        f"{args.traces} traces; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    head = (
        f"{'target':<26} | {'rows':>5} | {'wall s':>8} | {'limit s':>7} | {'calls':>5} | "
        f"{'model s':>7} | {'added s':>7} | {'busy s':>6} | {'idle s':>6} | {'CPU s':>6} | "
        f"{'in flight':>9} | verdict"
    )
    print(head)
    print("-" * len(head))
    for kind, r in results.items():
        label = (
            f"{args.rows} SFT rows / {args.traces} traces"
            if kind == "sft"
            else f"{args.preview_rows}-row preview"
        )
        verdict = "-" if args.quick else ("met" if r["wall_s"] < TARGETS_S[kind] else "MISSED")
        flight = f"{r['mean_in_flight']:.1f}/{r['peak_in_flight']}"
        print(
            f"{label:<26} | {r['rows']:>5} | {r['wall_s']:>8.1f} | {TARGETS_S[kind]:>7.0f} | "
            f"{r['calls']:>5} | {r['model_time_s']:>7.1f} | {r['added_s']:>7.1f} | "
            f"{r['model_busy_s']:>6.1f} | {r['idle_s']:>6.1f} | {r['cpu_s']:>6.1f} | {flight:>9} | "
            f"{verdict}"
        )
    print(
        "\nmodel s = calls × latency / parallel (the model's own time at full use); added s = "
        "wall − model s; busy s = time with at least one call in flight (the model's own time "
        "on the critical path); idle s = wall − busy s (no call in flight: start-up, BashGym "
        "and DataDesigner CPU); CPU s = user + sys of the bashgym process and its children; "
        "in flight = mean/peak calls held by the server (from arrival times)."
    )
    for kind, r in results.items():
        extra = ""
        if kind == "sft":
            steps = ", ".join(f"{k} {v:.1f}s" for k, v in r.get("timings_s", {}).items())
            counts = r.get("counts", {})
            extra = f"; kept {counts.get('kept')}, dropped {counts.get('dropped')}; steps: {steps}"
        print(
            f"  {kind}: {r['check_calls']} of the calls were preflight/health checks; first call "
            f"{r.get('to_first_call_s', float('nan')):.1f} s after start; peak RSS "
            f"{r['peak_rss_mib']:.0f} MiB{extra}"
        )
        print(f"    {r['command']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="SFT rows to keep.")
    parser.add_argument("--traces", type=int, default=50, help="Traces in the seed corpus.")
    parser.add_argument("--preview-rows", type=int, default=5, help="Rows the preview makes.")
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds per model call.")
    parser.add_argument("--parallel", type=int, default=16, help="Requests in flight per alias.")
    parser.add_argument("--only", choices=("sft", "preview"), help="Measure one target only.")
    parser.add_argument("--limit", type=float, default=3600, help="Kill a command after s.")
    parser.add_argument("--quick", action="store_true", help="CI: tiny sizes, nothing judged.")
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    parser.add_argument("--keep", action="store_true", help="Keep the work folder (logs, run).")
    parser.add_argument("--work", type=Path, help="Work folder to use (kept); default: a temp one.")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="Keep PYTHONDONTWRITEBYTECODE from the environment (every command compiles its "
        "modules from source: a first run's cost, or a box that sets it).",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return 0
    if args.quick:
        args.rows, args.traces, args.preview_rows, args.latency = 4, 3, 2, 0.05
    if min(args.rows, args.traces, args.preview_rows, args.parallel) < 1 or args.latency < 0:
        parser.error("--rows, --traces, --preview-rows and --parallel must be at least 1")
    if args.work:
        args.keep = True
        args.work.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="seed-targets-"))
    try:
        corpus = build_corpus(work / "corpus", args.traces)
        # --quick (CI) keeps the outer caches and skips the warm-up: ~30 s saved, nothing judged
        user = user_env(work / "user", own_cache=not args.quick, bytecode=not args.no_bytecode)
        if not args.quick:
            print(f"warm-up (not counted): {warm_up(args, user, work):.1f} s", flush=True)
        kinds = [args.only] if args.only else ["preview", "sft"]
        results = {kind: measure(kind, args, user, work, corpus) for kind in kinds}
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_table(results, args)
    if args.json:
        shown = {k: str(v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"args": shown, **results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
