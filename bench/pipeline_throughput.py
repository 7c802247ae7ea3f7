"""Records/s of a whole `bashgym run` (in one process, and sharded across local worker
processes) against a whole raw DataDesigner script, 50 ms server.

Why: BashGym wraps DataDesigner's `create()` in a run (model preflight, per-task drop
accounting, usage events, a progress display, secret scrubbing, a sink, report.html and
run.json). What the user waits for is the whole command, start-up included, so that is what is
timed: BashGym's records/s should stay within 5% of raw DataDesigner's on the same config. Both
are also shown against the latency-bound ideal (max_parallel_requests / latency), so a gap both
share (DataDesigner's own CPU per row) is told apart from BashGym's share.

Set-up, for each `max_parallel_requests` P:
- the scripted model server (`bashgym_testing.server.ScriptedModelServer`, fixed latency, its
  default echo reply) runs in its own process, so it never holds the measured processes' GIL;
- the config: one category sampler and one `LLMTextColumnConfig` on alias `default` with
  `max_parallel_requests=P`, N records, the same `buffer_size` both ways;
- `raw`: `python bench/pipeline_throughput.py --worker raw`, the script a user of DataDesigner
  writes: build the builder, `DataDesigner(...).create()`, `load_dataset()`, DataDesigner's
  defaults otherwise (RunConfig sets only `otel_metrics_port=None` and `buffer_size`; its
  column profiler runs, as by default);
- `bashgym`: the `bashgym` command itself, `bashgym run --plugin bench/pipeline_throughput.py
  -p throughput-bench -k parquet -n N` (this file is also that plugin: a pipeline that builds
  the very same builder, its ModelConfig from `bashgym_designer.models.model_config` on the
  run's `default` model, the alias set by `BASHGYM_MODELS__DEFAULT__*` env): plugin loading,
  the model preflight, create(), drop accounting, scrubbing, the parquet sink, report.html and
  run.json;
- `bashgym-sharded`: the same command with `--backend processes --set backend.workers=W`
  (default: the CPU count): each round split into W shards, each a DataDesigner `create()` with
  max_parallel_requests P (so up to W x P requests in flight) in a process of its own (W - 1
  started for the run, and the `bashgym` process itself), rows merged back in seed order. Raw
  DataDesigner is CPU-bound on one core (its event loop and the GIL); this is the way past it
  on one machine, and W cores are the most it can use (the scripted server shares them, and
  so does any other work on the box: each run's `others` column says how many cores that
  took).
Each command's wall time is measured from outside, process start to exit; records/s is N over
it. Inside each, the generation alone is timed too (raw: create()+load_dataset(); BashGym:
run.json's pipeline step), and the start-up (wall minus that) is shown apart, so a gap is
traced to start-up or to the per-record path. After `--warmup` untimed small runs of each
(disk caches, bytecode, the CLI's plugin index, as on a user's second run), each
configuration runs `--repeats` times (the CLI's plugin index is rebuilt untimed first should
another process have edited a plugin meanwhile: a user pays that once per install), the
methods taking turns at going first; the median and the min-max are shown. All are CPU-bound
at a few ms per row, so on a small or busy machine (the load average is printed) the ratio to
the raw run of the same repeat (side by side) is the figure to read. Targets: BashGym within
5% of raw at every P; sharded at least 1.8x raw at the highest P.

    uv run python bench/pipeline_throughput.py [--parallel 4,16,64] [--latency 0.05]
        [--records N] [--repeats 3] [--buffer-size 50] [--methods raw,bashgym,bashgym-sharded]
        [--workers W] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pluggy

STARTED = time.perf_counter()
METHODS = ("raw", "bashgym", "bashgym-sharded")
ALIAS = "default"
MODEL = "scripted-model"
PIPELINE = "throughput-bench"
KEY_ENV = "BENCH_SCRIPTED_API_KEY"
CHILD_TIMEOUT = 900  # seconds; a wedged run fails the bench instead of hanging it
OVERHEAD_LIMIT = 0.95  # BashGym should keep at least 95% of raw DataDesigner's records/s
SHARDED_TARGET = 1.8  # sharded across processes: at least this times raw at the highest P
WARMUP_RECORDS = 20
TOPICS = ["sorting", "hashing", "recursion", "regexes", "sockets", "parsing", "caching", "git"]


# -- the shared config ------------------------------------------------------------------------


def build_config(model_config: Any) -> Any:
    """The one builder both sides run: a sampler feeding one LLM text column."""
    import data_designer.config as dd

    builder = dd.DataDesignerConfigBuilder(model_configs=[model_config])
    builder.add_column(
        dd.SamplerColumnConfig(
            name="topic", sampler_type="category", params=dd.CategorySamplerParams(values=TOPICS)
        )
    )
    builder.add_column(
        dd.LLMTextColumnConfig(
            name="answer",
            prompt="Explain {{ topic }} to a new programmer in two sentences.",
            model_alias=ALIAS,
        )
    )
    return builder


# -- the BashGym side: this file is a plugin too (`bashgym run --plugin <this file>`) ----------

hookimpl = pluggy.HookimplMarker("bashgym")  # bashgym's own marker; pluggy is cheap to import


@hookimpl
def register_pipelines(register: Any) -> None:
    """The bench config as a pipeline (`-p throughput-bench --set pipeline.parallel=P`).
    Its classes are made here, not at import, so the raw side never imports bashgym."""
    from bashgym_designer.models import model_config

    from bashgym.contracts import Pipeline, PipelineOptions, RunContext

    class BenchOptions(PipelineOptions):
        parallel: int = 4

    class BenchPipeline(Pipeline[BenchOptions]):
        """The bench config; its model comes from the run's settings."""

        runner = "datadesigner"

        def build(self, options: BenchOptions, run: RunContext, seed: Any) -> Any:
            assert run.models is not None
            model = run.models.resolve(ALIAS)
            return build_config(model_config(model, max_parallel_requests=options.parallel))

    register(PIPELINE, BenchPipeline())


# -- the raw side: a user's DataDesigner script -----------------------------------------------


def worker_raw(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import data_designer.config as dd
    from data_designer.interface import DataDesigner

    model = dd.ModelConfig(
        alias=ALIAS,
        model=MODEL,
        provider=ALIAS,
        inference_parameters=dd.ChatCompletionInferenceParams(max_parallel_requests=args.parallel),
    )
    provider = dd.ModelProvider(
        name=ALIAS, endpoint=args.endpoint, provider_type="openai", api_key=KEY_ENV
    )
    builder = build_config(model)
    designer = DataDesigner(artifact_path=work / "artifacts", model_providers=[provider])
    designer.set_run_config(dd.RunConfig(otel_metrics_port=None, buffer_size=args.buffer_size))
    wall = time.perf_counter()
    results = designer.create(builder, num_records=args.records, dataset_name="dataset")
    rows = len(results.load_dataset())
    return {"generation": time.perf_counter() - wall, "rows": rows}


def serve(latency: float) -> None:
    """The scripted server in this process until stdin closes; prints its base URL first."""
    from bashgym_testing.server import ScriptedModelServer

    with ScriptedModelServer() as server:
        server.latency = latency
        print(server.openai_base_url, flush=True)
        sys.stdin.read()


# -- driver -----------------------------------------------------------------------------------


def child_env(args: argparse.Namespace, endpoint: str, home: Path) -> dict[str, str]:
    """One environment for both sides: offline, no telemetry, no user or project config."""
    from bashgym_designer.designer import offline_tokenizer

    offline_tokenizer()  # sets TIKTOKEN_CACHE_DIR to litellm's bundled cl100k_base file
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        print("warning: no offline cl100k_base; DataDesigner's profiler may try to download it")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASHGYM_")}
    (home / "no-bashgym.toml").write_text("")  # an empty settings file: none of the user's
    env.update(
        {
            "DATA_DESIGNER_HOME": str(home / "data-designer"),
            "NEMO_TELEMETRY_ENABLED": "false",
            KEY_ENV: "bench",
            "XDG_CONFIG_HOME": str(home / "config"),
            "BASHGYM_CONFIG": str(home / "no-bashgym.toml"),
            "BASHGYM_CACHE_DIR": str(home / "cache"),
            "BASHGYM_RUNS_DIR": str(home / "runs"),
            "BASHGYM_DESIGNER__BUFFER_SIZE": str(args.buffer_size),
            f"BASHGYM_MODELS__{ALIAS.upper()}__PROVIDER": "openai-compatible",
            f"BASHGYM_MODELS__{ALIAS.upper()}__ENDPOINT": endpoint,
            f"BASHGYM_MODELS__{ALIAS.upper()}__MODEL": MODEL,
            f"BASHGYM_MODELS__{ALIAS.upper()}__API_KEY_ENV": KEY_ENV,
        }
    )
    return env


def command(method: str, parallel: int, records: int, endpoint: str, args: Any, work: Path):
    """The whole command a user runs for `method`."""
    if method == "raw":
        return [
            sys.executable, __file__, "--worker", "raw", "--parallel", str(parallel),
            "--records", str(records), "--buffer-size", str(args.buffer_size),
            "--endpoint", endpoint, "--work", str(work),
        ]  # fmt: skip
    bashgym = Path(sys.executable).with_name("bashgym")
    cmd = [
        str(bashgym) if bashgym.is_file() else "bashgym", "run", "--plugin", __file__,
        "-p", PIPELINE, "--set", f"pipeline.parallel={parallel}", "-k", "parquet",
        "-n", str(records), "--out", str(work / "run"),
    ]  # fmt: skip
    if method == "bashgym-sharded":
        cmd += ["--backend", "processes", "--set", f"backend.workers={args.workers}"]
    return cmd


def index_is_fresh() -> bool:
    """Whether the CLI's plugin index matches the plugin files now (the children share this
    process's XDG_CACHE_HOME, so its index file)."""
    from bashgym_cli.index import catalogue

    return catalogue() is not None


def busy_cpu_s(pid: int | None = None) -> float:
    """CPU seconds the whole machine (or process `pid`) has used so far (Linux /proc; 0.0
    elsewhere): a run's share of it, against the command's and the server's, is what other
    processes took meanwhile -- on a shared box, the cores a sharded run could not have."""
    try:
        if pid is None:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
            ticks = sum(int(f) for i, f in enumerate(fields) if i not in (3, 4))  # not idle, iowait
        else:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks = int(stat[11]) + int(stat[12])  # utime, stime
    except (OSError, ValueError, IndexError):
        return 0.0
    return ticks / os.sysconf("SC_CLK_TCK")


def run_child(
    method: str, parallel: int, records: int, endpoint: str, env: dict[str, str], args: Any
) -> dict[str, Any]:
    """One whole command, timed from outside: wall and CPU (its own and its children's)."""
    if method != "raw" and not index_is_fresh():
        # Another process edited a plugin since the CLI indexed them (a shared checkout): the
        # next command would rebuild the index, which a user pays once per install, not per run.
        scratch = Path(tempfile.mkdtemp(prefix="bench-index-"))
        cmd = command("bashgym", 1, 1, endpoint, args, scratch)
        subprocess.run(cmd, env=env, capture_output=True, timeout=CHILD_TIMEOUT)
        shutil.rmtree(scratch, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f"bench-{method}-"))
    cmd = command(method, parallel, records, endpoint, args, work)
    try:
        with tempfile.TemporaryFile("w+") as err:  # logs go to stderr; kept for errors
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            machine, served = busy_cpu_s(), busy_cpu_s(args.server_pid)
            wall = time.perf_counter()
            proc = subprocess.run(
                cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, timeout=CHILD_TIMEOUT
            )
            wall = time.perf_counter() - wall
            machine, served = busy_cpu_s() - machine, busy_cpu_s(args.server_pid) - served
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(
                    f"{method} P={parallel} failed ({proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{err.read()[-3000:]}"
                )
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if method == "raw":
            inner = json.loads(proc.stdout.strip().splitlines()[-1])
            rows, generation, steps = inner["rows"], inner["generation"], {}
        else:
            summary = json.loads((work / "run" / "run.json").read_text())
            rows, steps = summary["counts"]["kept"], summary["timings_s"]
            generation = steps.get("pipeline", 0.0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if rows != records:
        raise SystemExit(f"{method} P={parallel}: {rows} of {records} rows")
    others = max(machine - cpu - served, 0.0) / wall  # cores busy with other work, on average
    return {
        "wall": wall, "cpu": cpu, "rows": rows, "generation": generation, "steps": steps,
        "server_cpu": served, "others_cores": others,
    }  # fmt: skip


def measure(parallel: int, args: argparse.Namespace, home: Path) -> dict[str, Any]:
    records = args.records or max(400, parallel * 40)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        endpoint = server.stdout.readline().strip()
        if not endpoint.startswith("http"):
            raise SystemExit("the scripted model server did not start")
        env = child_env(args, endpoint, home)
        args.server_pid = server.pid
        methods = args.methods
        for _ in range(args.warmup):  # untimed: disk caches, bytecode, the CLI's plugin index
            for method in methods:
                run_child(method, parallel, min(records, WARMUP_RECORDS), endpoint, env, args)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        for i in range(args.repeats):  # each method goes first in turn
            for method in methods[i % len(methods) :] + methods[: i % len(methods)]:
                runs[method].append(run_child(method, parallel, records, endpoint, env, args))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    return {"parallel": parallel, "records": records, "runs": runs}


def summarize(result: dict[str, Any], latency: float) -> dict[str, Any]:
    n = result["records"]
    out: dict[str, Any] = {
        "parallel": result["parallel"],
        "records": n,
        "ideal": result["parallel"] / latency,
    }
    for method, runs in result["runs"].items():
        rates = [n / r["wall"] for r in runs]
        out[method] = {
            "median": statistics.median(rates),
            "min": min(rates),
            "max": max(rates),
            "generation_rps": statistics.median(n / r["generation"] for r in runs),
            "cpu_ms_per_record": statistics.median(1000 * r["cpu"] / n for r in runs),
            "server_ms_per_record": statistics.median(1000 * r["server_cpu"] / n for r in runs),
            "others_cores": statistics.median(r["others_cores"] for r in runs),
            "startup_s": statistics.median(r["wall"] - r["generation"] for r in runs),
        }
    # Side by side: each BashGym run against the raw run of the same repeat, so drift cancels.
    for method in result["runs"]:
        if method == "raw":
            continue
        pairs = [
            r["wall"] / b["wall"]  # (n / b) / (n / r): records/s over raw's
            for r, b in zip(result["runs"]["raw"], result["runs"][method], strict=True)
        ]
        steps = [r["steps"] for r in result["runs"][method]]
        out[method]["steps_s"] = {
            k: statistics.median(s.get(k, 0.0) for s in steps) for k in steps[0]
        }
        out[method]["over_raw"] = statistics.median(pairs)
        out[method]["pair_min"], out[method]["pair_max"] = min(pairs), max(pairs)
    out["raw_over_ideal"] = out["raw"]["median"] / out["ideal"]
    out["runs"] = result["runs"]
    return out


def print_table(rows: list[dict[str, Any]], methods: list[str]) -> None:
    def rate(m: dict[str, float]) -> str:
        return f"{m['median']:6.1f} ({m['min']:.0f}-{m['max']:.0f})"

    ours = [m for m in methods if m != "raw"]
    head = f"\n{'P':>3} | {'N':>5} | {'ideal rec/s':>11} | {'raw DD rec/s':>16}"
    for m in ours:
        head += f" | {m + ' rec/s':>21} | {m + '/raw':>21}"
    print(head + f" | {'raw/ideal':>9}")
    print("-" * (len(head) + 12))
    for r in rows:
        line = (
            f"{r['parallel']:>3} | {r['records']:>5} | {r['ideal']:>11.0f} | {rate(r['raw']):>16}"
        )
        for m in ours:
            o = r[m]
            ratio = f"{o['over_raw']:.2f} ({o['pair_min']:.2f}-{o['pair_max']:.2f})"
            line += f" | {rate(o):>21} | {ratio:>21}"
        print(line + f" | {r['raw_over_ideal']:>9.2f}")
    print(
        f"\nMedians per P, {' / '.join(methods)}: start-up (wall outside generation) in s; "
        "generation alone in rec/s; CPU of the whole command (workers included) in ms per "
        "record; the server's CPU per record; cores other processes kept busy meanwhile (a "
        "shared box: what sharding could not use); then each BashGym method's steps (run.json)"
    )
    for r in rows:
        ms = [r[m] for m in methods]

        def each(key: str, spec: str, ms: list[dict[str, Any]] = ms) -> str:
            return " / ".join(format(m[key], spec) for m in ms)

        print(
            f"  P={r['parallel']:<3} start-up {each('startup_s', '4.1f')}"
            f"  generation {each('generation_rps', '6.1f')}"
            f"  cpu {each('cpu_ms_per_record', '5.2f')}"
            f"  server {each('server_ms_per_record', '4.2f')}"
            f"  others {each('others_cores', '4.2f')}"
        )
        for m in ours:
            steps = ", ".join(f"{k} {v:.2f}s" for k, v in r[m]["steps_s"].items())
            print(f"        {m} steps: {steps}")


def main() -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", default="4,16,64", help="max_parallel_requests values.")
    parser.add_argument("--latency", type=float, default=0.05, help="Server latency, seconds.")
    parser.add_argument(
        "--records", type=int, default=None, help="Records per run (default max(400, 40*P))."
    )
    parser.add_argument("--repeats", type=int, default=3, help="Runs per method and P.")
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="Untimed small runs per method and P, first (default 1; 0 with --repeats 1).",
    )
    parser.add_argument(
        "--buffer-size", type=int, default=None, help="Rows per batch (default: BashGym's)."
    )
    parser.add_argument(
        "--methods", default=",".join(METHODS), help=f"Which to run (raw always): {METHODS}."
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1,
        help="bashgym-sharded's backend.workers: processes, bashgym's own included (default: "
        "the CPU count).",
    )  # fmt: skip
    parser.add_argument("--json", default=None, help="Also write the results here.")
    parser.add_argument("--worker", choices=["raw"], help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.worker:
        args.parallel = int(args.parallel)
        print(json.dumps(worker_raw(args, Path(args.work))))
        return
    if args.buffer_size is None:
        from bashgym_designer.settings import DesignerSettings

        args.buffer_size = DesignerSettings().buffer_size  # the [designer] table's default

    asked = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(asked) - set(METHODS))
    if unknown:
        parser.error(f"--methods: unknown {', '.join(unknown)}; known: {', '.join(METHODS)}")
    args.methods = ["raw", *(m for m in METHODS if m in asked and m != "raw")]
    if args.warmup is None:
        args.warmup = 0 if args.repeats == 1 else 1  # one run per side: a quick check
    levels = [int(p) for p in args.parallel.split(",") if p.strip()]
    load_before = os.getloadavg()[0]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_before:.2f}; "
        f"server latency {args.latency * 1000:.0f} ms in its own process; buffer_size "
        f"{args.buffer_size}; {args.repeats} runs per method, each going first in turn.\n"
        "Whole commands, start-up included: raw = a DataDesigner script (create()+load_dataset(),"
        " its defaults: column profiler on); bashgym = `bashgym run -p … -k parquet` (preflight, "
        "create, drop accounting, scrub, parquet sink, report.html, run.json); bashgym-sharded = "
        f"the same with --backend processes, {args.workers} processes (bashgym's own and "
        f"{args.workers - 1} started for the run).",
        flush=True,
    )
    home = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    rows = []
    try:
        for parallel in levels:
            rows.append(summarize(measure(parallel, args, home), args.latency))
            r = rows[-1]
            ours = ", ".join(
                f"{m} {r[m]['median']:.1f} rec/s ({r[m]['over_raw']:.2f}x)"
                for m in args.methods[1:]
            )
            print(f"P={parallel}: raw {r['raw']['median']:.1f} rec/s, {ours}", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print_table(rows, args.methods)
    verdicts = []
    if "bashgym" in args.methods:
        slow = [f"P={r['parallel']}" for r in rows if r["bashgym"]["over_raw"] < OVERHEAD_LIMIT]
        verdicts.append(
            f"BashGym within {1 - OVERHEAD_LIMIT:.0%} of raw DataDesigner: "
            + (f"NO at {', '.join(slow)}" if slow else "yes, at every P")
        )
    if "bashgym-sharded" in args.methods:
        top = max(rows, key=lambda r: r["parallel"])
        got = top["bashgym-sharded"]["over_raw"]
        verdicts.append(
            f"sharded ({args.workers} processes) at P={top['parallel']}: {got:.2f}x raw "
            f"(target {SHARDED_TARGET}x: {'yes' if got >= SHARDED_TARGET else 'NO'})"
        )
    print(
        "\n"
        + "; ".join(verdicts)
        + f". Load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}."
    )
    if args.json:
        meta = {
            "latency": args.latency, "buffer_size": args.buffer_size, "cpus": os.cpu_count(),
            "workers": args.workers, "load_before": load_before,
            "load_after": os.getloadavg()[0],
        }  # fmt: skip
        Path(args.json).write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
