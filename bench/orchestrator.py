"""The orchestrator's own costs, each beside its bound or its bare counterpart, in one run.

(a) Scheduling (`bashgym_orchestrator.schedule.Scheduler`) on simulated workers with known
    durations: random DAGs of 10 … 10,000 tasks (each task 1-20 turns, up to 3 dependencies on
    recent tasks), run on W workers in simulated time. The makespan is divided by its lower
    bound max(critical path, total work / W) (target: at most 1.05), beside the same DAG
    dispatched in plan order (FIFO: what priority-by-longest-path buys) and with the estimates
    off by up to ±50 % (the scheduler orders by the estimate, the clock runs the actual).
    W is 4, 16 and "balanced" (total work / critical path: where both bounds meet, the hardest
    case). Overhead: the scheduler's own time (building it, every `take` and `succeed`) per
    task (target: under 1 ms at 10,000 tasks). All tasks are `normal` priority: a priority is a
    person's override of the makespan order.
(b) Planning: a ~500-word Markdown spec → a valid DAG through `load_spec`, `planner_model`,
    `make_plan` (the real provider client, litellm, against the scripted server with every
    answer delayed by `--latency` s standing in for the model), `validate_plan`, `write_plan`
    and `show`, on a git repository of a few hundred files. Non-model time = wall time less
    the server's latency × the requests made. Rows: a JSON-schema answer, one that needs the
    repair request (a cycle first), and the Anthropic forced tool call. litellm's import
    (once per process) is reported apart.
(c) Worktree cost per task: the orchestrator's `Repository.add_worktree` (every git command
    through bashgym_procs.git's policy, a stale worktree removed first, the admin dir checked)
    plus `copy_files` (.env), beside a bare `git worktree add -b` of the same repository and
    commit, interleaved in one event loop as a job has (target: at most 1.2×).
(d) Parallel workers: 10 independent tasks on 5 workers of the student executor (its real
    tool loop through litellm), the model the scripted server at `--latency` s a reply, each
    task a `run_command` then a summary, run by `bashgym orchestrate run` (the CLI app, in this
    process). No hang: every task merged and ended once within a watchdog's time; the peak of
    model requests in flight (should be 5); the job's wall time against the model-only
    makespan (each task its requests × latency, scheduled by the job's own Scheduler).
(e) A 3-feature spec with 5 workers: the spec of (b) planned and run in one
    `orchestrate run SPEC --yes` (11 tasks writing their files, `check = "true"`, verify a file
    test) on 5 student workers: what it spends outside the model -- planning, the job's wall
    less the model-only makespan, each task's time less its requests × latency (worktree,
    environment, commit, diff, check, merge), the sinks written as the job went.

    uv run python bench/orchestrator.py [--quick]
        [--only scheduling,planning,worktrees,parallel,features] [--latency 2.0] [--json F]

`--quick` runs tiny sizes (CI): DAGs of 10 and 100 tasks, a 0.05 s latency, 8 worktrees, 5
tasks in (d), 3 of the plan's tasks in (e), and the jobs' secret scrubbing off (its start-up is
seconds of CPU; the full run keeps it on, as a user's run has it).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import io
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym_orchestrator.schedule import Scheduler

KEY_ENV = "BENCH_ORCHESTRATOR_KEY"


# -- (a) scheduling --------------------------------------------------------------------------


@dataclass
class SimTask:
    id: str
    depends_on: list[str] = field(default_factory=list)
    priority: str = "normal"
    estimated_turns: int = 1


def random_dag(n: int, seed: int) -> list[SimTask]:
    """`n` tasks, each depending on up to 3 of the tasks just before it (a window that grows
    with n), so there are long chains and wide layers at every size."""
    rng = random.Random(seed)
    window = max(4, int(n**0.5))
    tasks = []
    for i in range(n):
        low = max(0, i - window)
        deps = {f"t{rng.randrange(low, i)}" for _ in range(rng.randint(0, 3))} if i else set()
        tasks.append(SimTask(f"t{i}", sorted(deps), "normal", rng.randint(1, 20)))
    return tasks


def bounds(tasks: list[SimTask], actual: dict[str, float], workers: int) -> tuple[float, float]:
    """The critical path and total work / workers, in actual durations."""
    finish: dict[str, float] = {}
    for task in tasks:  # plan order is a topological order here
        finish[task.id] = actual[task.id] + max((finish[d] for d in task.depends_on), default=0)
    return max(finish.values()), sum(actual.values()) / workers


class Fifo:
    """The baseline: ready tasks start in the order they became ready (plan order on ties)."""

    def __init__(self, tasks: list[SimTask]) -> None:
        self.waiting = {t.id: len(t.depends_on) for t in tasks}
        self.dependents: dict[str, list[str]] = {t.id: [] for t in tasks}
        for task in tasks:
            for dep in task.depends_on:
                self.dependents[dep].append(task.id)
        self.queue = deque(t.id for t in tasks if not t.depends_on)
        self.left = len(tasks)

    def take(self, n: int) -> list[str]:
        return [self.queue.popleft() for _ in range(min(n, len(self.queue)))]

    def succeed(self, tid: str) -> None:
        self.left -= 1
        for child in self.dependents[tid]:
            self.waiting[child] -= 1
            if self.waiting[child] == 0:
                self.queue.append(child)

    @property
    def done(self) -> bool:
        return self.left == 0


def simulate(
    tasks: list[SimTask], actual: dict[str, float], workers: int, fifo: bool = False
) -> tuple[float, float]:
    """(makespan, seconds spent inside the scheduler) of one simulated run."""
    clock, spent = 0.0, 0.0
    started = time.perf_counter()
    schedule: Any = Fifo(tasks) if fifo else Scheduler(tasks)
    spent += time.perf_counter() - started
    running: list[tuple[float, int, str]] = []
    seq = 0
    while not schedule.done:
        started = time.perf_counter()
        taken = schedule.take(workers - len(running))
        spent += time.perf_counter() - started
        for tid in taken:
            heapq.heappush(running, (clock + actual[tid], seq, tid))
            seq += 1
        clock, _, tid = heapq.heappop(running)
        started = time.perf_counter()
        schedule.succeed(tid)
        spent += time.perf_counter() - started
    return clock, spent


def scheduling(sizes: list[int], seed: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        tasks = random_dag(n, seed)
        exact = {t.id: float(t.estimated_turns) for t in tasks}
        rng = random.Random(seed + 1)
        noisy = {t.id: t.estimated_turns * rng.uniform(0.5, 1.5) for t in tasks}
        path, work = bounds(tasks, exact, 1)
        for label, workers in (("4", 4), ("16", 16), ("balanced", max(1, round(work / path)))):
            bound = max(bounds(tasks, exact, workers))
            makespan, spent = simulate(tasks, exact, workers)
            fifo, _ = simulate(tasks, exact, workers, fifo=True)
            off, _ = simulate(tasks, noisy, workers)
            rows.append(
                {
                    "tasks": n,
                    "workers": workers,
                    "workers_as": label,
                    "critical_path": path,
                    "work_per_worker": round(work / workers, 1),
                    "makespan": makespan,
                    "ratio": round(makespan / bound, 4),
                    "ratio_fifo": round(fifo / bound, 4),
                    "ratio_noisy": round(off / max(bounds(tasks, noisy, workers)), 4),
                    "overhead_us_per_task": round(spent / n * 1e6, 2),
                }
            )
            print(scheduling_line(rows[-1]), flush=True)
    return rows


SCHEDULING_HEADER = (
    f"{'tasks':>6} {'workers':>12} {'crit path':>9} {'work/W':>8} {'makespan':>9} "
    f"{'ratio':>6} {'FIFO':>6} {'±50%':>6} {'µs/task':>8}"
)


def scheduling_line(r: dict[str, Any]) -> str:
    workers = f"{r['workers']}" + (f" ({r['workers_as']})" if r["workers_as"] == "balanced" else "")
    return (
        f"{r['tasks']:>6} {workers:>12} {r['critical_path']:>9g} {r['work_per_worker']:>8g} "
        f"{r['makespan']:>9g} {r['ratio']:>6.3f} {r['ratio_fifo']:>6.3f} "
        f"{r['ratio_noisy']:>6.3f} {r['overhead_us_per_task']:>8.1f}"
    )


# -- (b) planning ----------------------------------------------------------------------------

SPEC = """\
+++
budget_usd = 20.0
verify = "uv run pytest -q"
check = "uv run ruff check ."
copy = [".env"]
+++
# Tags, search and export for the notes CLI

## Description
The `notes` command-line tool stores plain-text notes in a SQLite database under the user's
data folder. People who keep hundreds of notes cannot find them again: there is no way to group
notes, no search beyond listing titles, and no way to get notes out of the tool. This change
adds three features that share the storage layer: tags, full-text search and export.

Tags: a note can carry any number of tags, given as `--tag NAME` when a note is created or
with `notes tag ID NAME...` and `notes untag ID NAME...` later. Tag names are lower-case
words of letters, digits and hyphens; anything else is refused with a message that names the
rule. `notes list --tag NAME` shows only the notes carrying that tag, and `notes tags` lists
every tag with the number of notes that carry it, most used first.

Search: `notes search QUERY` finds notes whose title or body matches, using SQLite's FTS5 with
the porter tokenizer, ranked by bm25, showing the title, the date and a snippet with the
matched words highlighted on a terminal and plain otherwise. The index is kept up to date by
triggers, so notes written by an older version are indexed once by a migration, and editing a
note never leaves the index stale. Queries support phrases in quotes and a `tag:NAME` filter.

Export: `notes export --format markdown|json [--tag NAME] [--out DIR]` writes every note (or
the tagged ones) as one Markdown file per note with YAML front matter (title, tags, created,
updated), or as a single JSON Lines file. File names come from the title, made safe for every
file system, with a numeric suffix when two titles collide. Export never overwrites a file
unless `--force` is given.

## Constraints
- Python 3.11 and the standard library only: no new runtime dependencies.
- The database schema changes through a numbered migration that runs once, in a transaction,
  and leaves a database written by the previous version readable.
- Every command keeps working on an empty database and on a database of 100,000 notes, where
  search answers in under 200 ms.
- Output meant for scripts (`--json`) stays stable: existing keys keep their names and types.
- The storage layer stays the only module that runs SQL.

## Acceptance criteria
- `notes add "Groceries" --tag home --tag weekly` stores the note with both tags, and
  `notes list --tag home` shows it.
- `notes tags` prints each tag with its count, most used first.
- `notes search "oat milk" tag:home` returns the matching note with a highlighted snippet.
- A database made by the previous version is migrated on first use and searchable at once.
- `notes export --format markdown --out out/` writes one file per note with front matter that
  parses as YAML; a second run without `--force` refuses to overwrite.
- The test suite covers each command, the migration and the file-name collisions, and passes.
"""


def plan_answer() -> dict[str, Any]:
    def task(tid: str, deps: list[str], files: list[str], turns: int, prio: str = "normal"):
        return {
            "id": tid,
            "title": tid.replace("-", " "),
            "description": f"The {tid} part of the spec.",
            "priority": prio,
            "depends_on": deps,
            "files": files,
            "estimated_turns": turns,
            "budget_usd": 1.5,
            "prompt": f"Implement {tid} as the spec says, with tests. Touch only {files}.",
        }

    return {
        "tasks": [
            task("schema-migration", [], ["notes/storage.py", "notes/migrations.py"], 12, "high"),
            task("tag-storage", ["schema-migration"], ["notes/storage.py"], 8, "high"),
            task("tag-commands", ["tag-storage"], ["notes/cli/tags.py"], 10),
            task("list-by-tag", ["tag-storage"], ["notes/cli/list.py"], 6),
            task("fts-index", ["schema-migration"], ["notes/search_index.py"], 14, "high"),
            task("search-command", ["fts-index", "tag-storage"], ["notes/cli/search.py"], 12),
            task("export-markdown", ["tag-storage"], ["notes/export/markdown.py"], 10),
            task("export-json", ["tag-storage"], ["notes/export/jsonl.py"], 6),
            task("safe-file-names", [], ["notes/export/names.py"], 5),
            task(
                "export-command",
                ["export-markdown", "export-json", "safe-file-names"],
                ["notes/cli/export.py"],
                8,
            ),
            task(
                "docs-and-perf",
                ["search-command", "export-command", "tag-commands", "list-by-tag"],
                ["README.md", "tests/test_perf.py"],
                8,
                "low",
            ),
        ]
    }


def make_repo(root: Path, files: int) -> Path:
    """A git repository with a README, an .env and `files` tracked source files, one commit."""
    root.mkdir(parents=True)
    for i in range(files):
        path = root / f"pkg{i % 17}" / f"sub{i % 5}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n' + "".join(f"X{j} = {j}\n" for j in range(60)))
    (root / "README.md").write_text("# notes\n\nA command-line notebook.\n" * 40)
    (root / ".env").write_text("SECRET=bench\n")
    (root / ".gitignore").write_text(".env\n")
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@x"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    return root


def planning(latency: float, rounds: int, root: Path) -> list[dict[str, Any]]:
    # litellm's import (seconds, once per process) is start-up, not planning; offline, as the
    # model session imports it
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    started = time.perf_counter()
    import litellm  # noqa: F401

    litellm_s = time.perf_counter() - started
    from bashgym_models_providers.session import ModelSession
    from bashgym_orchestrator.plan import validate_plan, write_plan
    from bashgym_orchestrator.planning import TOOL_NAME, make_plan, planner_model
    from bashgym_orchestrator.show import show
    from bashgym_orchestrator.spec import load_spec
    from bashgym_testing import Reply, ScriptedModelServer, ToolUse

    from bashgym.settings import ModelAlias, Settings

    os.environ[KEY_ENV] = "bench-key"
    repo = make_repo(root / "repo", 400)
    spec_file = root / "spec.md"
    spec_file.write_text(SPEC)
    words = len(SPEC.split("+++", 2)[2].split())
    answer = plan_answer()
    cycle = json.loads(json.dumps(answer))
    cycle["tasks"][1]["depends_on"].append("search-command")  # a cycle the repair fixes

    def one(server: Any, provider: str, replies: list[Any]) -> tuple[float, int, int]:
        base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
        alias = ModelAlias(
            provider=provider, model="bench", endpoint=base, api_key_env=KEY_ENV,
            params={"max_retries": 0},
        )  # fmt: skip
        server.reset()
        server.latency = latency
        server.script(*replies)
        with ModelSession(Settings(models={"planner": alias})) as models:
            started = time.perf_counter()
            spec = load_spec(spec_file)
            plan = asyncio.run(
                make_plan(spec, repo, planner_model(models), cap_usd=spec.budget_usd)
            )
            assert validate_plan(plan, spec.budget_usd) == []
            write_plan(plan, root / "job" / "plan.json")
            show(plan, cap_usd=spec.budget_usd, file=io.StringIO())
            wall = time.perf_counter() - started
        return wall, len(server.completions), len(plan.tasks)

    def text(plan: dict[str, Any]) -> Reply:
        return Reply(json.dumps(plan))

    def tool(plan: dict[str, Any]) -> Reply:
        return Reply(tool_calls=[ToolUse(TOOL_NAME, plan)])

    cases = [
        ("json schema", "openai-compatible", [text(answer)]),
        ("json schema, repaired", "openai-compatible", [text(cycle), text(answer)]),
        ("anthropic tool call", "anthropic", [tool(answer)]),
    ]
    rows = []
    with ScriptedModelServer() as server:
        # warm: each provider's first call in a process sets up its client (seconds)
        one(server, "openai-compatible", [text(answer)])
        one(server, "anthropic", [tool(answer)])
        for label, provider, replies in cases:
            walls, calls, tasks = [], 0, 0
            for _ in range(rounds):
                wall, calls, tasks = one(server, provider, replies)
                walls.append(wall)
            wall = statistics.median(walls)
            rows.append(
                {
                    "case": label,
                    "spec_words": words,
                    "tasks": tasks,
                    "requests": calls,
                    "latency_s": latency,
                    "wall_s": round(wall, 3),
                    "non_model_s": round(wall - calls * latency, 3),
                    "litellm_import_s": round(litellm_s, 2),
                }
            )
            print(planning_line(rows[-1]), flush=True)
    return rows


PLANNING_HEADER = (
    f"{'case':<24} {'words':>5} {'tasks':>5} {'requests':>8} {'latency':>8} {'wall s':>7} "
    f"{'non-model s':>11}"
)


def planning_line(r: dict[str, Any]) -> str:
    return (
        f"{r['case']:<24} {r['spec_words']:>5} {r['tasks']:>5} {r['requests']:>8} "
        f"{r['latency_s']:>8g} {r['wall_s']:>7.3f} {r['non_model_s']:>11.3f}"
    )


# -- (c) worktrees ---------------------------------------------------------------------------


def worktrees(count: int, files: int, root: Path) -> list[dict[str, Any]]:
    from bashgym_orchestrator.worktrees import Repository, copy_files, task_branch

    repo_dir = make_repo(root / "wt-repo", files)
    repo = Repository(repo_dir)
    base = subprocess.run(
        ["git", "-C", str(repo_dir), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()

    def bare(i: int) -> float:
        path = root / "bare" / f"t{i}"
        started = time.perf_counter()
        subprocess.run(
            ["git", "-C", str(repo_dir), "worktree", "add", "-q", "-b", f"bare/t{i}",
             str(path), base],
            check=True,
        )  # fmt: skip
        return time.perf_counter() - started

    async def ours(i: int) -> float:
        started = time.perf_counter()
        tree = await repo.add_worktree(root / "job" / f"t{i}", task_branch("bench", f"t{i}"), base)
        copy_files(repo_dir, tree.path, [".env"])
        return time.perf_counter() - started

    times: dict[str, list[float]] = {"bare": [], "orchestrator": []}

    async def interleaved() -> None:  # one event loop, as a job has
        bare(-1)  # warm: the first checkout reads every object from disk
        await ours(-1)
        for i in range(count):
            times["bare"].append(bare(i))
            times["orchestrator"].append(await ours(i))

    asyncio.run(interleaved())
    bare_s = statistics.median(times["bare"])
    ours_s = statistics.median(times["orchestrator"])
    row = {
        "files": files,
        "worktrees": count,
        "bare_git_ms": round(bare_s * 1000, 1),
        "orchestrator_ms": round(ours_s * 1000, 1),
        "ratio": round(ours_s / bare_s, 3),
        "bench_rss_mb": _rss_mb(),
    }
    print(
        f"{files:>6} {count:>9} {row['bare_git_ms']:>12.1f} {row['orchestrator_ms']:>16.1f} "
        f"{row['ratio']:>6.3f}",
        flush=True,
    )
    return [row]


def _rss_mb() -> int:
    """This process's resident size: a git child's start-up cost grows with it when Python
    must fork (bashgym_procs avoids that: see its `_launch`)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


WORKTREE_HEADER = (
    f"{'files':>6} {'worktrees':>9} {'bare git ms':>12} {'orchestrator ms':>16} {'ratio':>6}"
)


# -- (d) parallel workers and (e) a 3-feature spec: whole jobs on the student -------------------

# --quick's sub-DAG of the 3-feature plan: a chain of two and one task beside it
QUICK_FEATURES = ["schema-migration", "tag-storage", "safe-file-names"]
TASK_NAMED = re.compile(r"Task ([A-Za-z0-9._-]+): ")


def _texts(request: Any) -> list[str]:
    out = []
    for message in request.messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def task_of(request: Any) -> str | None:
    """The task a worker's request is about (its prompt starts `Task <id>: `), else None."""
    found = next((m for t in _texts(request) if (m := TASK_NAMED.search(t))), None)
    return found.group(1) if found else None


def by_task(commands: dict[str, str]) -> Any:
    """The scripted student: per task, a `run_command` doing it, then a one-line summary (the
    workers run in parallel, so the answer is chosen by the task named in the prompt)."""
    from bashgym_testing import Reply, ToolUse

    def answer(request: Any) -> Any:
        tid = task_of(request)
        if tid not in commands:
            return Reply("ok")
        if not any(m.get("role") == "tool" for m in request.messages):
            return Reply(
                f"Doing {tid}.", tool_calls=[ToolUse("run_command", {"command": commands[tid]})]
            )
        return Reply(f"Task {tid} is done.")

    return answer


def bench_env(root: Path, base_url: str, scrub: bool = True) -> tuple[Path, dict[str, str]]:
    """A work folder whose bashgym.toml points `default` (the student's and the planner's
    alias) at the scripted server, and the environment a `bashgym` process gets there (the
    user's own config and BASHGYM_* variables left out)."""
    work = root / "work"
    work.mkdir(parents=True)
    (work / "bashgym.toml").write_text(
        f'[models.default]\nprovider = "openai-compatible"\nmodel = "scripted-student"\n'
        f'endpoint = "{base_url}"\napi_key_env = "{KEY_ENV}"\nparams = {{max_retries = 0}}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASHGYM_")}
    env.update({KEY_ENV: "bench-key", "XDG_CONFIG_HOME": str(root / "config")})
    if not scrub:  # --quick: the secrets scrubber's start-up (seconds) is not what it checks
        env["BASHGYM_SCRUB__ENABLED"] = "false"
    return work, env


def bashgym(work: Path, env: dict[str, str], *args: str, timeout: float) -> float:
    """`bashgym ARGS` run in this process from `work` with `env` (as the tests' CLI runner
    does: the imports (b) made are not counted again); its wall time. A command that does not
    end in `timeout` s is a hang: the bench says so and exits."""
    from bashgym_cli import build_app
    from typer.testing import CliRunner

    from bashgym.plugins import PluginHost, use_host

    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(work)
    host = PluginHost()
    previous = use_host(host)
    watchdog = threading.Timer(timeout, _hang, args=(args, timeout))
    watchdog.daemon = True
    watchdog.start()
    started = time.perf_counter()
    try:
        done = CliRunner().invoke(build_app(host), list(args), catch_exceptions=False)
    finally:
        took = time.perf_counter() - started
        watchdog.cancel()
        use_host(previous)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)
    if done.exit_code != 0:
        raise SystemExit(f"`bashgym {' '.join(args[:3])}` failed:\n{done.stdout}{done.stderr}")
    return took


def _hang(args: tuple[str, ...], timeout: float) -> None:
    print(f"HANG: `bashgym {' '.join(args[:3])}` ran over {timeout:g}s", flush=True)
    os._exit(1)


def model_makespan(plan: Any, turns: dict[str, float], workers: int) -> float:
    """The job's makespan if only the model took time: each task `turns[t]` s, scheduled by
    the orchestrator's own Scheduler on `workers` (the bound the real job is held against)."""
    tasks = [SimTask(t.id, list(t.depends_on), t.priority, t.estimated_turns) for t in plan.tasks]
    makespan, _ = simulate(tasks, {t.id: turns.get(t.id, 0.0) for t in plan.tasks}, workers)
    return makespan


def peak_in_flight(requests: list[Any], latency: float) -> int:
    """Most model requests the server held at once (each held `latency` s from arrival)."""
    edges = sorted([(r.timestamp, 1) for r in requests] +
                   [(r.timestamp + latency, -1) for r in requests])  # fmt: skip
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def job_figures(job_dir: Path, server: Any, latency: float, workers: int) -> dict[str, Any]:
    """What a finished job says of its time, beside what the model took."""
    from bashgym_orchestrator.job import Job

    job = Job.at(job_dir)
    result = job.result() or {}
    run = json.loads((job_dir / "run.json").read_text())
    calls = [r for r in server.completions if task_of(r) is not None]
    per_task: dict[str, float] = {}
    for request in calls:
        tid = task_of(request) or ""
        per_task[tid] = per_task.get(tid, 0.0) + latency
    plan = job.plan()
    bound = model_makespan(plan, per_task, workers)
    overheads = [
        entry["duration_s"] - per_task.get(tid, 0.0) for tid, entry in result["tasks"].items()
    ]
    finished = [e for e in _events(job_dir) if e["type"] == "task_finished"]
    return {
        "tasks": len(plan.tasks),
        "workers": workers,
        "merged": result["counts"].get("merged", 0),
        "each_ended_once": sorted(e["task_id"] for e in finished)
        == sorted(t.id for t in plan.tasks),
        "model_requests": len(calls),
        "peak_in_flight": peak_in_flight(calls, latency),
        "wall_s": result["wall_s"],
        "model_makespan_s": round(bound, 3),
        "non_model_s": round(result["wall_s"] - bound, 3),
        "ratio": round(result["wall_s"] / bound, 3) if bound else None,
        "task_overhead_median_s": round(statistics.median(overheads), 3),
        "task_overhead_max_s": round(max(overheads), 3),
        "sink_rewrites": run.get("streamed_sinks", {}).get("rewrites"),
        "sink_rewrite_s": run.get("streamed_sinks", {}).get("seconds"),
        "verify_ok": (result.get("verify") or {}).get("ok"),
        "environment": result.get("environment"),
    }


def _events(job_dir: Path) -> list[dict[str, Any]]:
    text = (job_dir / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parallel(
    latency: float, tasks: int, workers: int, root: Path, scrub: bool = True
) -> list[dict[str, Any]]:
    """(d) `tasks` independent tasks on `workers` student workers: all end, none hangs, and
    the job's wall time is held against the model's (2 requests a task, `latency` each)."""
    from bashgym_orchestrator.job import Job
    from bashgym_orchestrator.plan import Plan, PlannedTask
    from bashgym_orchestrator.spec import Spec
    from bashgym_testing import ScriptedModelServer

    repo = make_repo(root / "repo", 50)
    commands = {f"t{i}": f"echo t{i} > t{i}.txt" for i in range(1, tasks + 1)}
    plan = Plan(
        title="parallel",
        planner="bench",
        approved=True,
        tasks=[PlannedTask(id=t, title=f"write {t}.txt", prompt=f"Write {t}.txt.",
                           files=[f"{t}.txt"], estimated_turns=2) for t in commands],
    )  # fmt: skip
    with ScriptedModelServer() as server:
        work, env = bench_env(root, server.openai_base_url, scrub)
        job = Job(work / "job")
        job.dir.mkdir()
        job.save_spec(Spec(title="parallel", repository=repo, verify="test -f t1.txt"))
        job.save_plan(plan)
        server.latency = latency
        server.add_rule(lambda r: True, by_task(commands))
        command_s = bashgym(work, env, "orchestrate", "run", str(job.dir), "-x", "student",
                            "--workers", str(workers), "-k", "nemo-jsonl",
                            timeout=120 + 20 * latency * tasks)  # fmt: skip
        row = job_figures(job.dir, server, latency, workers)
    row.update(latency_s=latency, command_s=round(command_s, 3))
    print(parallel_line(row), flush=True)
    return [row]


PARALLEL_HEADER = (
    f"{'tasks':>5} {'workers':>7} {'merged':>6} {'peak':>4} {'latency':>7} {'wall s':>7} "
    f"{'model s':>7} {'ratio':>6} {'task overhead s (median/max)':>29} {'command s':>9}"
)


def parallel_line(r: dict[str, Any]) -> str:
    over = f"{r['task_overhead_median_s']:.2f} / {r['task_overhead_max_s']:.2f}"
    return (
        f"{r['tasks']:>5} {r['workers']:>7} {r['merged']:>6} {r['peak_in_flight']:>4} "
        f"{r['latency_s']:>7g} {r['wall_s']:>7.2f} {r['model_makespan_s']:>7.2f} "
        f"{r['ratio']:>6.3f} {over:>29} {r['command_s']:>9.2f}"
    )


def features(
    latency: float, workers: int, root: Path, only: list[str] | None = None, scrub: bool = True
) -> list[dict[str, Any]]:
    """(e) The 3-feature spec of (b), planned and run in one `orchestrate run SPEC --yes` on
    `workers` student workers: what the job spends outside the model."""
    from bashgym_orchestrator.job import Job
    from bashgym_testing import Reply, ScriptedModelServer

    repo = make_repo(root / "repo", 400)
    answer = plan_answer()
    if only:  # --quick: a sub-DAG of the plan
        answer["tasks"] = [t for t in answer["tasks"] if t["id"] in only]
    commands = {
        t["id"]: " && ".join(
            f"mkdir -p {os.path.dirname(f) or '.'} && echo '# {t['id']}' >> {f}" for f in t["files"]
        )
        for t in answer["tasks"]
    }
    made = "notes/storage.py" if only else "notes/cli/export.py"
    spec = SPEC.replace('verify = "uv run pytest -q"', f'verify = "test -f {made}"').replace(
        'check = "uv run ruff check ."', 'check = "true"'
    )  # the bench's repository has no project to test: the job's own commands stand in
    spec_file = root / "spec.md"
    spec_file.write_text(spec)
    with ScriptedModelServer() as server:
        work, env = bench_env(root, server.openai_base_url, scrub)
        server.latency = latency
        server.script(Reply(json.dumps(answer)))  # the planner's answer, then the workers'
        server.add_rule(lambda r: True, by_task(commands))
        command_s = bashgym(work, env, "orchestrate", "run", str(spec_file), "--repo", str(repo),
                            "--yes", "-x", "student", "--workers", str(workers),
                            "-k", "nemo-jsonl", timeout=300 + 60 * latency)  # fmt: skip
        job_dir = next(p for p in (work / "runs").iterdir() if p.is_dir())
        row = job_figures(job_dir, server, latency, workers)
        planning = Job.at(job_dir).planning()
    row.update(
        latency_s=latency,
        spec_words=len(SPEC.split("+++", 2)[2].split()),
        planning_s=planning.duration_s,
        planning_non_model_s=round(planning.duration_s - planning.requests * latency, 3),
        command_s=round(command_s, 3),
    )
    row["start_and_finish_s"] = round(command_s - row["planning_s"] - row["wall_s"], 3)
    print(features_lines(row), flush=True)
    return [row]


def features_lines(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"  spec of {r['spec_words']} words → {r['tasks']} tasks on {r['workers']} workers, "
            f"model latency {r['latency_s']:g} s; all merged: {r['merged'] == r['tasks']}, "
            f"each ended once: {r['each_ended_once']}, verify ok: {r['verify_ok']}",
            f"  planning              {r['planning_s']:>8.2f} s, outside the model "
            f"{r['planning_non_model_s']:.2f} s",
            f"  job wall              {r['wall_s']:>8.2f} s, the model alone "
            f"{r['model_makespan_s']:.2f} s (its makespan on {r['workers']} workers): outside the "
            f"model {r['non_model_s']:.2f} s",
            f"  per task outside      {r['task_overhead_median_s']:>8.2f} s median, "
            f"{r['task_overhead_max_s']:.2f} s max (worktree, commit, check, merge)",
            f"  sinks as it went      {r['sink_rewrite_s'] or 0:>8.2f} s in "
            f"{r['sink_rewrites']} rewrites",
            f"  before and after      {r['start_and_finish_s']:>8.2f} s (the run's start, the "
            "student's preflight, the final sink write, report)",
            f"  whole command         {r['command_s']:>8.2f} s (in this process: imports not "
            "counted)",
        ]
    )


# -- the run -----------------------------------------------------------------------------------


def summary(results: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, str, bool]]:
    """(measure, value, target, met) rows for the issue's targets."""
    rows = []
    if results.get("scheduling"):
        runs = results["scheduling"]
        largest = max(r["tasks"] for r in runs)
        worst = max(r["ratio"] for r in runs)
        overhead = max(r["overhead_us_per_task"] for r in runs if r["tasks"] == largest)
        rows.append(("makespan / bound, worst of all", f"{worst:.3f}", "≤ 1.05", worst <= 1.05))
        rows.append((f"scheduler µs per task at {largest:,} tasks", f"{overhead:.1f}",
                     "< 1000", overhead < 1000))  # fmt: skip
    if results.get("planning"):
        worst_s = max(r["non_model_s"] for r in results["planning"])
        rows.append(("planning non-model s, worst", f"{worst_s:.3f}", "< 6 (60 / 10)",
                     worst_s < 6))  # fmt: skip
    if results.get("worktrees"):
        ratio = results["worktrees"][0]["ratio"]
        rows.append(("worktree / bare git worktree add", f"{ratio:.3f}", "≤ 1.2", ratio <= 1.2))
    for part in ("parallel", "features"):
        for r in results.get(part, []):
            whole = r["merged"] == r["tasks"] and r["each_ended_once"]
            rows.append((f"{part}: tasks merged, each ended once", f"{r['merged']}/{r['tasks']}",
                         "all, no hang", whole))  # fmt: skip
            if part == "parallel":
                rows.append(("parallel: peak model requests at once", f"{r['peak_in_flight']}",
                             f"= {r['workers']}", r["peak_in_flight"] == r["workers"]))  # fmt: skip
            rows.append((f"{part}: wall / model-only makespan", f"{r['ratio']:.3f}",
                         "reported", True))  # fmt: skip
            rows.append((f"{part}: job wall outside the model, s", f"{r['non_model_s']:.2f}",
                         "reported", True))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--only", default="scheduling,planning,worktrees,parallel,features")
    parser.add_argument("--sizes", help="DAG sizes (default 10,100,1000,10000)")
    parser.add_argument("--latency", type=float, help="model latency, s (default 2.0)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    sizes = [
        int(s) for s in (args.sizes or ("10,100" if args.quick else "10,100,1000,10000")).split(",")
    ]
    latency = args.latency if args.latency is not None else (0.05 if args.quick else 2.0)
    load = os.getloadavg()
    print(f"cores {os.cpu_count()}, load average {load[0]:.2f}, python {sys.version.split()[0]}")
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-orchestrator-") as tmp:
        if "scheduling" in parts:
            print("\n(a) scheduling on simulated workers: makespan / max(critical path, work / W)")
            print(SCHEDULING_HEADER)
            results["scheduling"] = scheduling(sizes, args.seed)
        if "planning" in parts:
            print(f"\n(b) planning a spec, the model a scripted server at {latency:g} s a reply")
            print(PLANNING_HEADER)
            results["planning"] = planning(latency, 1 if args.quick else 3, Path(tmp) / "plan")
            took = results["planning"][0]["litellm_import_s"]
            print(f"(litellm import, once per process: {took} s)")
        if "worktrees" in parts:
            print("\n(c) worktree per task beside a bare `git worktree add`")
            print(WORKTREE_HEADER)
            count, files = (8, 50) if args.quick else (15, 2000)
            results["worktrees"] = worktrees(count, files, Path(tmp) / "wt")
        if "parallel" in parts:
            tasks = 5 if args.quick else 10
            print(f"\n(d) {tasks} tasks on 5 student workers, the model at {latency:g} s a reply")
            print(PARALLEL_HEADER)
            results["parallel"] = parallel(
                latency, tasks, 5, Path(tmp) / "parallel", scrub=not args.quick
            )
        if "features" in parts:
            print(f"\n(e) the 3-feature spec of (b) planned and run on 5 student workers, the "
                  f"model at {latency:g} s a reply")  # fmt: skip
            only = QUICK_FEATURES if args.quick else None
            results["features"] = features(
                latency, 5, Path(tmp) / "features", only=only, scrub=not args.quick
            )
    print("\nTargets")
    for measure, value, target, met in summary(results):
        print(f"  {measure:<40} {value:>9}  target {target:<14} {'met' if met else 'NOT MET'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
