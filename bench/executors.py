"""Tasks/minute and per-task overhead of the executors against a scripted server at fixed latency.

Why: an executor's own cost (starting `claude`, the SDK's control protocol, litellm, the tool
calls in the environment, building the Trace) should be small beside the model's latency, and
concurrency should scale the work until the machine's cores run out. Each executor's tasks/min
is shown beside the latency-bound ideal (concurrency × 60 / (model calls per task × latency)),
and its overhead per task is the median task time less its model calls × latency.

Set-up:
- the scripted model server (`bashgym_testing.server.ScriptedModelServer`) runs in its own
  process (this script with `--serve`), so it never holds the measured process's GIL; every
  request waits `--latency` s; a task's first request gets one tool call (`run_command echo` for
  the student, `Bash echo` for Claude Code), the request after a tool result gets "Done.";
- each task runs through `bashgym_work_tasks.run_task` in its own temp workspace, in the `local`
  environment, as the engine runs it; `--tasks-per-lane` tasks per unit of concurrency;
- claude-cli and agent-sdk run the real `claude` binary (bundled in the claude-agent-sdk wheel).
Only the batch of tasks is timed (imports, the server's start and one warm-up task per
executor are not). On a small or busy
machine (the load average is printed) the ratio to the ideal is the figure to read: the
`claude` binary takes about a core-second to start, so on 2 cores its runs are CPU-bound.

    uv run python bench/executors.py [--executors student,claude-cli,agent-sdk]
        [--concurrency 1,4,16] [--latency 0.2] [--tasks-per-lane 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

KEY_ENV = "BENCH_EXECUTORS_KEY"
ALIASES = {"student": "student", "claude-cli": "claude", "agent-sdk": "claude"}


# -- the server process ------------------------------------------------------------------------


def serve(port: int, latency: float) -> None:
    """Run the scripted server until stdin closes (the bench's end, or its death)."""
    from bashgym_testing.server import RecordedRequest, Reply, ToolUse

    sys.path.insert(0, str(Path(__file__).parent))
    from _scripted_child import serve as serve_rules

    def after_tool(req: RecordedRequest) -> bool:
        last = req.messages[-1] if req.messages else {}
        content = last.get("content")
        blocks = content if isinstance(content, list) else []
        return last.get("role") == "tool" or any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
        )

    serve_rules(port, latency, [
        (after_tool, Reply("Done.")),
        (lambda r: r.api == "openai",
         Reply(tool_calls=[ToolUse("run_command", {"command": "echo hi"})])),
        (lambda r: True, Reply(tool_calls=[ToolUse("Bash", {"command": "echo hi"})])),
    ])  # fmt: skip


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process (bench/_scripted_child.py) and its base URL."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _scripted_child import start_server as start_child

    proc, port = start_child(__file__, latency)
    return proc, f"http://127.0.0.1:{port}"


# -- one batch ---------------------------------------------------------------------------------


def settings(base_url: str) -> Any:
    from bashgym.settings import ModelAlias, Settings

    key = {"api_key_env": KEY_ENV, "params": {"max_retries": 0}}
    return Settings(
        models={
            "student": ModelAlias(
                provider="openai-compatible", model="bench", endpoint=f"{base_url}/v1", **key
            ),
            "claude": ModelAlias(
                provider="anthropic", model="claude-sonnet-4-5", endpoint=base_url, **key
            ),
        }
    )


async def batch(name: str, concurrency: int, tasks: int, base_url: str, root: Path) -> dict:
    from bashgym_work_tasks import run_task

    from bashgym.contracts import RunContext, TaskContext, open_models
    from bashgym.plugins import PluginHost
    from bashgym.records import Task

    host = PluginHost()
    registry = host.registry
    executor = registry.get("executors", name).obj
    env = registry.get("environments", "local").obj
    options = executor.Options()
    if name != "student":
        options = executor.Options(config_dir=str(root / "claude-config"))
    config = settings(base_url)
    run = RunContext(root / "run", config, models=open_models(config, registry, host.hook))
    lanes = asyncio.Semaphore(concurrency)

    async def one(i: int) -> tuple[float, int, str]:
        async with lanes:
            workspace = root / "ws" / f"{name}-{concurrency}-{i}"
            workspace.mkdir(parents=True)
            async with env.open(workspace, env.Options()) as session:
                ctx = TaskContext(run=run, env=session)
                task = Task(id=f"t{i}", prompt=f"say hi ({i})")
                started = time.perf_counter()
                result = await run_task(executor, name, task, options, ctx)
                took = time.perf_counter() - started
        calls = sum(1 for m in result.trace.messages if m.role == "assistant")
        return took, calls, result.status

    started = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in range(tasks)))
    wall = time.perf_counter() - started
    run.models.close()
    statuses = [s for _, _, s in done]
    if any(s != "success" for s in statuses):
        raise SystemExit(f"{name}: tasks did not succeed: {statuses}")
    return {"wall_s": wall, "durations": [d for d, _, _ in done], "calls": [c for _, c, _ in done]}


def measure(args: argparse.Namespace) -> list[dict]:
    # litellm's import (seconds) is start-up, not an executor's per-task cost; offline, as the
    # model session imports it (else its import fetches a price list from GitHub, with retries)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401

    os.environ[KEY_ENV] = "bench-key"
    server, base_url = start_server(args.latency)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-executors-") as tmp:
            for name in args.executors:
                # one untimed task first: the first call in a process sets up clients and caches
                asyncio.run(batch(name, 1, 1, base_url, Path(tmp) / f"{name}-warm-up"))
                for concurrency in args.concurrency:
                    tasks = concurrency * args.tasks_per_lane
                    root = Path(tmp) / f"{name}-{concurrency}"
                    got = asyncio.run(batch(name, concurrency, tasks, base_url, root))
                    calls = statistics.median(got["calls"])
                    ideal_task_s = calls * args.latency
                    rate = tasks / got["wall_s"] * 60
                    ideal = concurrency * 60 / ideal_task_s
                    rows.append(
                        {
                            "executor": name,
                            "concurrency": concurrency,
                            "tasks": tasks,
                            "model_calls_per_task": calls,
                            "tasks_per_min": round(rate, 1),
                            "ideal_tasks_per_min": round(ideal, 1),
                            "ratio_to_ideal": round(rate / ideal, 3),
                            "median_task_s": round(statistics.median(got["durations"]), 3),
                            "overhead_per_task_s": round(
                                statistics.median(got["durations"]) - ideal_task_s, 3
                            ),
                        }
                    )
                    print(table_row(rows[-1]), flush=True)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    return rows


HEADER = (
    f"{'executor':<11} {'conc':>4} {'tasks':>5} {'tasks/min':>10} {'ideal':>8} {'ratio':>6} "
    f"{'task s':>7} {'overhead s':>10}"
)


def table_row(r: dict) -> str:
    return (
        f"{r['executor']:<11} {r['concurrency']:>4} {r['tasks']:>5} {r['tasks_per_min']:>10} "
        f"{r['ideal_tasks_per_min']:>8} {r['ratio_to_ideal']:>6} {r['median_task_s']:>7} "
        f"{r['overhead_per_task_s']:>10}"
    )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--executors", default="student,claude-cli,agent-sdk")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--tasks-per-lane", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.executors = [e.strip() for e in args.executors.split(",") if e.strip()]
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    load = os.getloadavg()
    print(f"cores {os.cpu_count()}, load average {load[0]:.2f}, latency {args.latency:g} s")
    print(HEADER)
    rows = measure(args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
