"""The ray backend against the in-process engine, in one run: agent tasks/s and generation
rows/s at a fixed model latency, Ray's overhead per task, and a 16-node projection from it.

Why: a cluster is worth its set-up only when what Ray adds per task (shipping the job, a
context rebuilt on the worker, the result and events back) is small beside a task's own time.

Set-up (all on this machine, a local Ray instance with `--slots` CPUs):
- the scripted model server (`bashgym_testing`) in its own process, every request waiting
  `--latency` s; agent tasks run the `student` executor (two model calls: a tool call, then
  "Done."), generation is a seeded pipeline with one LLM column (one call per row);
- each figure is a whole `bashgym.engine.execute` run (store, events, sink), timed by run.json's
  step timings (`executor` or `pipeline`), so start-up is not counted; before each timed Ray
  run an untimed one of the same slot shape warms its worker processes (each loads the
  plugins once, and a slot's first tasks pay their first-call imports);
- in-process at concurrency k = 1, 2 and 4 against Ray with k task slots of one task each
  (task_cpus = slots / k) and, for k > 1, one slot running k tasks at once (`slot_tasks`);
  generation in-process against Ray with 1 and 2 shards.
Overhead per task, two ways: end to end (Ray's time per task less the in-process engine's at
the same concurrency; time per task = step time × concurrency / tasks), which on a machine with
fewer cores than processes also counts the worker processes' contention for CPU; and Ray's own
(a call's round trip less its time on the slot, from run.json's `backend` section). The
16-node projection: 16 nodes × the slots of one (`--node-slots`) running tasks of the
in-process time plus Ray's own overhead, capped by the driver's CPU per task (measured: the
driver records every task, one at a time).

    uv run python bench/ray_backend.py [--tasks 16] [--rows 16] [--latency 0.5] [--quick]
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
from typing import Any

KEY_ENV = "BENCH_RAY_KEY"

PLUGIN = '''
from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions


class Answer(Pipeline[PipelineOptions]):
    """One LLM answer per seed task (the bench's generation)."""

    runner = "datadesigner"
    needs_seed = True

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(dd.LLMTextColumnConfig(name="answer", prompt="Answer: {{ task }}",
                                                  model_alias="default"))
        return builder


@hookimpl
def register_pipelines(register):
    register("bench-answer", Answer())
'''


def serve(port: int, latency: float) -> None:
    """The scripted server until stdin closes: a tool call first, "Done." after a tool result."""
    from bashgym_testing.server import RecordedRequest, Reply, ToolUse

    sys.path.insert(0, str(Path(__file__).parent))
    from _scripted_child import serve as serve_rules

    def after_tool(req: RecordedRequest) -> bool:
        return bool(req.messages) and req.messages[-1].get("role") == "tool"

    def agent(req: RecordedRequest) -> bool:
        return bool(req.body.get("tools")) if isinstance(req.body, dict) else False

    serve_rules(port, latency, [
        (after_tool, Reply("Done.")),
        (agent, Reply(tool_calls=[ToolUse("run_command", {"command": "true"})])),
    ])  # fmt: skip


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process (bench/_scripted_child.py) and its base URL."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _scripted_child import start_server as start_child

    proc, port = start_child(__file__, latency)
    return proc, f"http://127.0.0.1:{port}/v1"


class Bench:
    """Runs through the engine, in-process or on the local Ray instance."""

    def __init__(self, root: Path, base_url: str) -> None:
        from bashgym_cli import load_plugin

        from bashgym.plugins import PluginHost, use_host

        self.root = root
        config = root / "bashgym.toml"
        alias = (
            f'provider = "openai-compatible"\nmodel = "bench"\nendpoint = "{base_url}"\n'
            f'api_key_env = "{KEY_ENV}"\n'
        )
        config.write_text("".join(f"[models.{a}]\n{alias}" for a in ("default", "student")))
        os.environ["BASHGYM_CONFIG"] = str(config)
        self.plugin = root / "bench_plugin.py"
        self.plugin.write_text(PLUGIN)
        self.host = PluginHost()
        self.host.remove("observers-progress")  # its lines would bury the figures
        load_plugin(self.host, str(self.plugin))
        use_host(self.host)
        self.count = 0
        self.startups: list[float] = []  # each Ray run's slots ready (connect, warm), seconds

    def run(self, kind: str, n: int, concurrency: int, backend: dict[str, Any] | None) -> float:
        """One run; the seconds of its executor (agent) or pipeline (generation) step."""
        from bashgym.engine import execute
        from bashgym.runspec import RunSpec, StepSpec, resolve
        from bashgym.settings import load_settings

        self.count += 1
        inputs = self.root / f"in-{self.count}"
        inputs.mkdir()
        common: dict[str, Any] = {
            "sinks": [StepSpec(plugin="parquet")],
            "out": self.root / f"run-{self.count}",
            "plugins": [str(self.plugin)],
            "backend": StepSpec(plugin="ray", options=backend) if backend else None,
        }
        if kind == "agent":
            (inputs / "tasks.txt").write_text("".join(f"say hi ({i})\n" for i in range(n)))
            spec = RunSpec(
                source=StepSpec(plugin="prompts", options={"path": str(inputs / "tasks.txt")}),
                executor=StepSpec(plugin="student"), environment=StepSpec(plugin="local"),
                tables={"tasks": {"concurrency": concurrency}}, **common,
            )  # fmt: skip
        else:
            (inputs / "seed.csv").write_text("task\n" + "".join(f"task {i}\n" for i in range(n)))
            spec = RunSpec(
                source=StepSpec(plugin="files", options={"path": str(inputs / "seed.csv")}),
                pipeline=StepSpec(plugin="bench-answer"), num_records=n, **common,
            )  # fmt: skip
        resolved = resolve(spec, self.host.registry)
        summary = execute(resolved, self.host, load_settings(self.host.registry.settings_tables))
        kept = summary["counts"]["kept"]
        if backend:
            self.startups.append(summary["backend"]["startup_s"])
            self.section = summary["backend"]
        if kind == "agent" and summary.get("tasks", {}).get("success") != n:
            raise SystemExit(f"agent run: not every task succeeded: {summary.get('tasks')}")
        if kind != "agent" and kept != n:
            raise SystemExit(f"generation run kept {kept} of {n} rows: {summary['counts']}")
        return float(summary["timings_s"]["executor" if kind == "agent" else "pipeline"])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ[KEY_ENV] = "bench-key"  # set before Ray starts: its workers read it by name
    from bashgym_backends_ray.cluster import import_ray

    ray = import_ray()
    server, base_url = start_server(args.latency)
    out: dict[str, Any] = {"latency_s": args.latency, "slots": args.slots, "agent": [], "gen": []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
            bench = Bench(Path(tmp), base_url)
            ray.init(num_cpus=args.slots, include_dashboard=False, log_to_driver=False,
                     logging_level="WARNING")  # fmt: skip
            bench.run("agent", args.slots, 1, None)  # warm-up: imports, the first model call
            for k in (4,) if args.quick else (1, 2, 4):
                here = bench.run("agent", args.tasks, k, None)
                # k slots of one task each, then (k > 1) one slot running k tasks at once
                shapes = [(k, 1)] + ([(1, k)] if k > 1 else [])
                for slots, per_slot in shapes:
                    shape = {"task_cpus": args.slots / slots, "slot_tasks": per_slot}
                    # untimed: new slots' first tasks pay their first-call imports
                    bench.run("agent", k, k, shape)
                    cpu0 = time.process_time()
                    there = bench.run("agent", args.tasks, k, shape)
                    driver_cpu = (time.process_time() - cpu0) / args.tasks
                    sec = bench.section
                    out["agent"].append(dict(
                        concurrency=k, slots=slots, slot_tasks=per_slot, in_process_s=here,
                        ray_s=there, driver_cpu_per_task_s=driver_cpu,
                        worker_task_s=sec["task_worker_s"] / sec["tasks"],
                        ray_round_trip_extra_s=(sec["task_round_trip_s"] - sec["task_worker_s"])
                        / sec["tasks"],
                    ))  # fmt: skip
                    print(agent_line(args.tasks, out["agent"][-1]), flush=True)
            bench.run("gen", 2, 1, None)  # untimed: DataDesigner's first run in this process
            bench.run("gen", 2, 1, {"shards": 2})  # untimed: the generation slots warmed
            here = bench.run("gen", args.rows, 1, None)
            out["gen"].append(dict(shards=0, seconds=here))
            for shards in (2,) if args.quick else (1, 2):
                there = bench.run("gen", args.rows, 1, {"shards": shards})
                out["gen"].append(dict(shards=shards, seconds=there))
            for g in out["gen"]:
                print(gen_line(args.rows, g, here), flush=True)
    finally:
        ray.shutdown()
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    out["ray_startup_s"] = bench.startups
    print(f"ray slots ready per run (connect + plugins loaded on each slot): "
          f"{', '.join(f'{s:.1f}' for s in bench.startups)} s", flush=True)  # fmt: skip
    out["projection"] = project(out, args)
    return out


def agent_line(n: int, r: dict[str, Any]) -> str:
    k = r["concurrency"]
    per_here, per_ray = r["in_process_s"] * k / n, r["ray_s"] * k / n
    r.update(
        in_process_tasks_per_s=round(n / r["in_process_s"], 3),
        ray_tasks_per_s=round(n / r["ray_s"], 3),
        in_process_task_s=round(per_here, 4),
        overhead_per_task_s=round(per_ray - per_here, 4),
        overhead_ratio=round((per_ray - per_here) / per_here, 4),
    )
    return (
        f"agent  conc {k}, {r['slots']} slot(s) x {r['slot_tasks']}: "
        f"in-process {r['in_process_tasks_per_s']:>7} tasks/s   "
        f"ray {r['ray_tasks_per_s']:>7} tasks/s   ratio {r['in_process_s'] / r['ray_s']:.3f}"
        f"   overhead/task {r['overhead_per_task_s'] * 1000:+.0f} ms "
        f"({r['overhead_ratio'] * 100:+.1f}% of {per_here:.3f} s)"
        f"   driver CPU/task {r['driver_cpu_per_task_s'] * 1000:.1f} ms"
        f"\n         a task on its slot {r['worker_task_s']:.3f} s, Ray's round trip adds "
        f"{r['ray_round_trip_extra_s'] * 1000:.0f} ms"
    )


def gen_line(n: int, g: dict[str, Any], here: float) -> str:
    g["rows_per_s"] = round(n / g["seconds"], 2)
    g["ratio_to_in_process"] = round(here / g["seconds"], 3)
    where = (
        "in-process  " if not g["shards"] else f"ray {g['shards']} shard{'s' * (g['shards'] > 1)} "
    )
    return f"generation {where}: {g['rows_per_s']:>7} rows/s   ratio {g['ratio_to_in_process']}"


def project(out: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """16 nodes of `node_slots` slots each running tasks of the in-process time plus what Ray's
    round trip adds per task (measured at the highest concurrency: the job there, the result
    and events back), capped by the driver's measured CPU per task (it records each task)."""
    last = out["agent"][-1]  # concurrency 4, one slot running them (a node's way)
    task_s = last["in_process_task_s"] + max(last["ray_round_trip_extra_s"], 0.0)
    slots = 16 * args.node_slots
    cap = 1 / last["driver_cpu_per_task_s"] if last["driver_cpu_per_task_s"] > 0 else None
    rate = slots / task_s if cap is None else min(slots / task_s, cap)
    one = args.node_slots / task_s
    line = (
        f"16 nodes x {args.node_slots} slots, tasks of {task_s:.3f} s: {rate:.1f} tasks/s "
        f"({rate / one:.1f}x one node's {one:.1f}); the driver caps it at "
        f"{'?' if cap is None else f'{cap:.0f}'} tasks/s"
    )
    print(line, flush=True)
    return dict(nodes=16, node_slots=args.node_slots, task_s=round(task_s, 4),
                tasks_per_s=round(rate, 2), one_node_tasks_per_s=round(one, 2),
                driver_cap_tasks_per_s=None if cap is None else round(cap, 1))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=int, default=16, help="agent tasks per run")
    parser.add_argument("--rows", type=int, default=16, help="generated rows per run")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model request")
    parser.add_argument("--slots", type=int, default=4, help="CPUs of the local Ray instance")
    parser.add_argument(
        "--node-slots", type=int, default=16, help="task slots per node (16-node projection)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes, concurrency 4 only: it still runs"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), float(args.serve[1]))
        return
    if args.quick:
        args.tasks, args.rows, args.latency = 4, 4, 0.05
    load = os.getloadavg()[0]
    print(f"latency {args.latency} s per request, {args.tasks} tasks, {args.rows} rows, "
          f"load average {load:.1f} on {os.cpu_count()} CPUs", flush=True)  # fmt: skip
    figures = measure(args)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
