"""Records/s of a BashGym run against raw DataDesigner on the same config, against a 50 ms server.

Why: BashGym wraps DataDesigner's `create()` in a run (a RunConfig with per-task traces, drop
accounting, a progress bar, secret scrubbing, a sink, report.html and run.json). That wrapper
must cost little: BashGym's records/s should stay within 10% of raw DataDesigner on the same
config. Both are also shown against the latency-bound ideal (max_parallel_requests / latency),
so a gap that both share (DataDesigner's own CPU per row) is told apart from BashGym's share.

Set-up, for each `max_parallel_requests` P:
- the scripted model server (`bashgym_testing.server.ScriptedModelServer`, fixed latency, its
  default echo reply) runs in its own process, so it never holds the measured processes' GIL;
- the config: one category sampler and one `LLMTextColumnConfig` on alias `default` with
  `max_parallel_requests=P`, N records, the same `buffer_size` both ways;
- `raw`: a fresh process builds the builder and times `DataDesigner(...).create()` plus
  `load_dataset()` with DataDesigner's defaults, as a user would run it (RunConfig sets only
  `otel_metrics_port=None` and `buffer_size`; its column profiler runs, as by default);
- `bashgym`: a fresh process loads the installed plugins plus a pipeline that builds the very
  same builder (its ModelConfig from `bashgym_designer.models.model_config` on the run's
  `default` model, the alias set by `BASHGYM_MODELS__DEFAULT__*` env), resolves the run the
  way `bashgym run` does, and times `bashgym.engine.execute()` end to end: create(), drop
  accounting, scrubbing, the parquet sink, report.html and run.json. Its per-step split (from
  run.json) is printed too.
Only the generation call is timed, inside each process, so start-up is excluded: the BashGym
side does DataDesigner's lazy imports before its clock starts, as the raw side does; BashGym's
own lazy work during a run (e.g. loading detect-secrets' detectors) is counted against it.
Each configuration runs `--repeats` times, raw and BashGym alternating which goes first;
the median and the min-max are shown. DataDesigner is CPU-bound at a few ms per row, so on a
small or busy machine (the load average is printed) the ratio is the figure to read.

    uv run python bench/pipeline_throughput.py [--parallel 4,16,64] [--latency 0.05]
        [--records N] [--repeats 3] [--buffer-size 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()  # a worker's start-up (imports, set-up) is reported, not timed
METHODS = ("raw", "bashgym")
ALIAS = "default"
MODEL = "scripted-model"
KEY_ENV = "BENCH_SCRIPTED_API_KEY"
CHILD_TIMEOUT = 900  # seconds; a wedged run fails the bench instead of hanging it
OVERHEAD_LIMIT = 0.90  # BashGym should keep at least 90% of raw DataDesigner's records/s
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


# -- workers (each in its own process) --------------------------------------------------------


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
    wall, cpu = time.perf_counter(), time.process_time()
    results = designer.create(builder, num_records=args.records, dataset_name="dataset")
    rows = len(results.load_dataset())
    startup = wall - STARTED
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "rows": rows, "startup": startup}


def worker_bashgym(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from bashgym_designer.designer import prepare_environment
    from bashgym_designer.models import model_config

    from bashgym import hookimpl
    from bashgym.contracts import Pipeline, PipelineOptions, RunContext, open_models
    from bashgym.engine import execute
    from bashgym.plugins import current_host
    from bashgym.runspec import RunSpec, StepSpec, resolve
    from bashgym.settings import load_settings

    class BenchOptions(PipelineOptions):
        parallel: int = 4

    class BenchPipeline(Pipeline[BenchOptions]):
        """The bench config as a pipeline plugin; its model comes from the run's settings."""

        runner = "datadesigner"

        def build(self, options: BenchOptions, run: RunContext, seed: Any) -> Any:
            assert run.models is not None
            model = run.models.resolve(ALIAS)
            return build_config(model_config(model, max_parallel_requests=options.parallel))

    class BenchPlugin:
        @hookimpl
        def register_pipelines(self, register: Any) -> None:
            register("bench", BenchPipeline())

    # What `bashgym run --plugin bench.py -p bench -k parquet -n N` does before execute().
    host = current_host()
    settings = load_settings(host.registry.settings_tables)
    host.add(BenchPlugin(), "bench-pipeline")
    spec = RunSpec(
        pipeline=StepSpec(plugin="bench", options={"parallel": args.parallel}),
        sinks=[StepSpec(plugin="parquet")],
        num_records=args.records,
        out=work / "run",
    )
    resolved = resolve(spec, host.registry)
    # execute() imports DataDesigner lazily (1-3 s on a small machine: `data_designer.config`
    # and `.interface` import each name on first access). The raw side does those imports
    # before its clock starts, so they are done here too, after setting the env DataDesigner
    # reads at import time: a throwaway builder, like the raw side's, and the DataDesigner class.
    prepare_environment(settings)
    with open_models(settings, host.registry, host.hook, serve=False) as models:
        build_config(model_config(models.resolve(ALIAS)))
    importlib.import_module("data_designer.interface").DataDesigner  # noqa: B018
    wall, cpu = time.perf_counter(), time.process_time()
    summary = execute(resolved, host, settings)
    startup = wall - STARTED
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "startup": startup,
        "wall": wall,
        "cpu": cpu,
        "rows": summary["counts"]["kept"],
        "steps": summary["timings_s"],
        "dropped": summary["counts"]["dropped"],
    }


def worker(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"bench-{args.worker}-"))
    try:
        run = worker_raw if args.worker == "raw" else worker_bashgym
        print(json.dumps(run(args, work)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    env = dict(os.environ)
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


def run_child(
    method: str, parallel: int, records: int, endpoint: str, env: dict[str, str], args: Any
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        method,
        "--parallel",
        str(parallel),
        "--records",
        str(records),
        "--buffer-size",
        str(args.buffer_size),
        "--endpoint",
        endpoint,
    ]
    with tempfile.TemporaryFile("w+") as err:  # DataDesigner logs to stderr; keep it for errors
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, timeout=CHILD_TIMEOUT
        )
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{method} P={parallel} failed:\n{err.read()[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["rows"] != records:
        raise SystemExit(f"{method} P={parallel}: {out['rows']} of {records} rows: {out}")
    return out


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
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
        for i in range(args.repeats):
            for method in METHODS if i % 2 == 0 else METHODS[::-1]:
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
            "cpu_ms_per_record": statistics.median(1000 * r["cpu"] / n for r in runs),
            "startup_s": statistics.median(r["startup"] for r in runs),
        }
    steps = [r["steps"] for r in result["runs"]["bashgym"]]
    out["bashgym_steps_s"] = {k: statistics.median(s.get(k, 0.0) for s in steps) for k in steps[0]}
    out["bashgym_over_raw"] = out["bashgym"]["median"] / out["raw"]["median"]
    out["raw_over_ideal"] = out["raw"]["median"] / out["ideal"]
    out["runs"] = result["runs"]
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    def rate(m: dict[str, float]) -> str:
        return f"{m['median']:6.1f} ({m['min']:.0f}-{m['max']:.0f})"

    print(
        f"\n{'P':>3} | {'N':>5} | {'ideal rec/s':>11} | {'raw DD rec/s':>18} | "
        f"{'BashGym rec/s':>18} | {'BashGym/raw':>11} | {'raw/ideal':>9}"
    )
    print("-" * 95)
    for r in rows:
        print(
            f"{r['parallel']:>3} | {r['records']:>5} | {r['ideal']:>11.0f} | "
            f"{rate(r['raw']):>18} | {rate(r['bashgym']):>18} | "
            f"{r['bashgym_over_raw']:>11.2f} | {r['raw_over_ideal']:>9.2f}"
        )
    print(
        "\nMedians per P: CPU of the measured process in ms per record, raw / BashGym; "
        "untimed start-up (imports, set-up) in s, raw / BashGym; BashGym's steps (run.json)"
    )
    for r in rows:
        raw, ours = r["raw"], r["bashgym"]
        steps = ", ".join(f"{k} {v:.2f}s" for k, v in r["bashgym_steps_s"].items())
        print(
            f"  P={r['parallel']:<3} cpu {raw['cpu_ms_per_record']:5.2f} / "
            f"{ours['cpu_ms_per_record']:5.2f}  start-up {raw['startup_s']:4.1f} / "
            f"{ours['startup_s']:4.1f}  steps: {steps}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", default="4,16,64", help="max_parallel_requests values.")
    parser.add_argument("--latency", type=float, default=0.05, help="Server latency, seconds.")
    parser.add_argument(
        "--records", type=int, default=None, help="Records per run (default max(400, 40*P))."
    )
    parser.add_argument("--repeats", type=int, default=3, help="Runs per method and P.")
    parser.add_argument(
        "--buffer-size", type=int, default=None, help="Rows per batch (default: BashGym's)."
    )
    parser.add_argument("--json", default=None, help="Also write the results here.")
    parser.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.buffer_size is None:
        from bashgym_designer.settings import DesignerSettings

        args.buffer_size = DesignerSettings().buffer_size  # the [designer] table's default
    if args.worker:
        args.parallel = int(args.parallel)
        worker(args)
        return

    levels = [int(p) for p in args.parallel.split(",") if p.strip()]
    load_before = os.getloadavg()[0]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_before:.2f}; "
        f"server latency {args.latency * 1000:.0f} ms in its own process; buffer_size "
        f"{args.buffer_size}; {args.repeats} runs per side, alternating order.\n"
        "raw = DataDesigner create()+load_dataset() with its defaults (column profiler on); "
        "BashGym = engine.execute() end to end (create, drop accounting, scrub, parquet sink, "
        "report.html, run.json; DataDesigner's profiler off). Start-up is not timed.",
        flush=True,
    )
    home = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    rows = []
    try:
        for parallel in levels:
            rows.append(summarize(measure(parallel, args, home), args.latency))
            r = rows[-1]
            print(
                f"P={parallel}: raw {r['raw']['median']:.1f} rec/s, BashGym "
                f"{r['bashgym']['median']:.1f} rec/s ({r['bashgym_over_raw']:.2f}x)",
                flush=True,
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print_table(rows)
    slow = [f"P={r['parallel']}" for r in rows if r["bashgym_over_raw"] < OVERHEAD_LIMIT]
    print(
        f"\nBashGym within {1 - OVERHEAD_LIMIT:.0%} of raw DataDesigner: "
        + (f"NO at {', '.join(slow)}" if slow else "yes, at every P")
        + f". Load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}."
    )
    if args.json:
        meta = {"latency": args.latency, "buffer_size": args.buffer_size, "cpus": os.cpu_count()}
        Path(args.json).write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
