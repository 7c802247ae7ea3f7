"""A job end to end on real git repositories and real processes (the `shell` test executor runs
each task's ```sh block in the `local` environment): DAG order, retries with the failure in
the prompt, conflicts kept and reported, verify, budgets, traces read back as a source."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from bashgym_orchestrator.job import Job

from bashgym import hookimpl
from bashgym.contracts import NoOptions, Route, Router, Sink, Written

RUN = ("-x", "shell", "-e", "local")
# a GitHub token's shape: the worker prints it (its prompt holds it split in two), and it is
# scrubbed from every file of the job
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.slow
def test_dag_retry_conflict_verify_and_traces(
    bashgym_cli: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    flag = tmp_path / "failed-once"
    tasks = [
        orch.shell_task(
            "a", f"echo A > a.txt; echo token={TOKEN[:8]}''{TOKEN[8:]}", priority="high"
        ),
        orch.shell_task("b", "echo from-b >> shared.txt"),
        orch.shell_task("c", "echo from-c >> shared.txt"),
        orch.shell_task("d", "cat a.txt > d.txt", deps=("a",)),
        # fails its check once (writes `bad`), passes on the retry
        orch.shell_task(
            "e",
            f"if [ -f {flag} ]; then echo good > e.txt; else touch {flag}; echo bad > e.txt; fi",
            deps=("d",),
            check="grep -q good e.txt",
        ),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f a.txt && test -f e.txt")
    head = orch.git(repo, "rev-parse", "HEAD")

    done = bashgym_cli(
        "orchestrate",
        "run",
        job.dir,
        *RUN,
        "--plugin",
        orch.shell_plugin,
        "--workers",
        "3",
        "-k",
        "nemo-jsonl",
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["status"] == "done"
    states = {tid: t["state"] for tid, t in result["tasks"].items()}
    conflicted = [tid for tid, s in states.items() if s == "conflicted"]
    assert len(conflicted) == 1 and conflicted[0] in ("b", "c"), states  # the later of b, c
    assert sum(s == "merged" for s in states.values()) == 4, result["tasks"]  # why, if not
    loser = result["tasks"][conflicted[0]]
    assert (
        loser["conflicts"] == ["shared.txt"] and loser["branch"] == f"bashgym/job/{conflicted[0]}"
    )
    assert (job.worktrees / conflicted[0]).is_dir()  # kept for a look, and reported
    assert f"conflict {conflicted[0]}: shared.txt" in done.output
    # the retry: two attempts, the failed one's branch kept, its check output in the prompt
    assert result["tasks"]["e"]["attempts"] == 2
    branches = orch.git(repo, "branch", "--format=%(refname:short)").split()
    assert "bashgym/job/e-attempt-1" in branches and "bashgym/job/integration" in branches
    # the integration branch: every merged task's work, dependencies first (d read a's file)
    files = orch.git(repo, "ls-tree", "--name-only", "bashgym/job/integration").split()
    assert {"a.txt", "d.txt", "e.txt"} <= set(files)
    assert orch.git(repo, "show", "bashgym/job/integration:d.txt") == "A"
    assert orch.git(repo, "show", "bashgym/job/integration:e.txt") == "good"
    assert result["verify"]["ok"] is True
    # the user's checkout is untouched: same branch, same commit, uncommitted change kept
    assert orch.git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert orch.git(repo, "rev-parse", "HEAD") == head
    assert "not committed" in (repo / "README.md").read_text()
    # worktrees of merged tasks are gone
    assert not (job.worktrees / "a").exists() and not (job.worktrees / "d").exists()
    # each task ended exactly once; the job's events
    assert orch.finished_counts(job) == {t.id: 1 for t in tasks}
    kinds = [e["type"] for e in orch.events(job)]
    for kind in (
        "task_started",
        "task_completed",
        "task_failed",
        "merge_result",
        "verify_result",
        "traces_ingested",
    ):
        assert kind in kinds, kind
    retry = next(e for e in orch.events(job) if e["type"] == "task_failed")
    assert retry["task_id"] == "e" and retry["final"] is False
    # traces: every successful attempt and the plan as SFT lines, the failed attempt a negative
    sft = job.dir / "nemo-jsonl"
    lines = [
        json.loads(x)
        for f in ("train.jsonl", "val.jsonl")
        for x in (sft / f).read_text().splitlines()
    ]
    assert len(lines) == 6, (sft / "manifest.json").read_text()
    negatives = (sft / "negatives.jsonl").read_text().splitlines()
    assert len(negatives) == 1
    for written in [*sft.iterdir(), job.dir / "state.db", job.dir / "events.jsonl"]:
        assert TOKEN.encode() not in written.read_bytes(), written
    retry_prompt = next(
        m["content"]
        for x in lines
        for m in x["messages"]
        if m["role"] == "user" and "Task e:" in m["content"]
    )
    assert "An earlier attempt" in retry_prompt and "grep -q good e.txt" in retry_prompt

    # the finished job read as a source: one row per attempt with its orchestrator facts
    read = bashgym_cli(
        "run",
        "-s",
        "orchestrator",
        "--set",
        f"source.job={job.dir}",
        "-k",
        "parquet",
        "-o",
        tmp_path / "read",
    )
    assert read.exit_code == 0, read.output
    rows = pd.read_parquet(next((tmp_path / "read").rglob("*.parquet")))
    workers = rows[rows["kind"] == "worker"]
    assert len(workers) == 6 and (rows["kind"] == "plan").sum() == 1
    e_rows = workers[workers["task_id"] == "e"].sort_values("attempt")
    assert list(e_rows["check_passed"]) == [False, True]
    assert list(e_rows["branch"]) == ["bashgym/job/e-attempt-1", "bashgym/job/e"]
    assert e_rows.iloc[1]["merge"] == "merged"
    trace = json.loads(e_rows.iloc[1]["trace"])
    assert trace["extra"]["orchestrator"]["merge"] == "merged"
    assert trace["provenance"]["git_branch"] == "bashgym/job/e"
    loser_row = workers[workers["task_id"] == conflicted[0]].iloc[0]
    assert loser_row["merge"] == "conflicted"


def test_budget_stops_dispatch(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("a", "echo a > a.txt", cost=0.5, budget_usd=0.5, priority="critical"),
        orch.shell_task("b", "echo b > b.txt", cost=0.5, budget_usd=0.5, priority="high"),
        orch.shell_task("c", "echo c > c.txt", cost=0.5, budget_usd=0.5),
        orch.shell_task("d", "echo d > d.txt", deps=("c",), budget_usd=0.1),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate",
        "run",
        job.dir,
        *RUN,
        "--plugin",
        orch.shell_plugin,
        "--workers",
        "1",
        "--budget",
        "1.0",
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    states = {tid: t["state"] for tid, t in result["tasks"].items()}
    assert states == {"a": "merged", "b": "merged", "c": "blocked", "d": "blocked"}
    assert result["tasks"]["c"]["attempts"] == 0  # never started
    assert "budget" in result["tasks"]["c"]["reason"]
    assert "'c'" in result["tasks"]["d"]["reason"]
    started = [e["task_id"] for e in orch.events(job) if e["type"] == "task_started"]
    assert started == ["a", "b"]
    assert result["cost_usd"] == 1.0


def test_unapproved_plan_does_not_run(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", "true")], approved=False)
    done = bashgym_cli("orchestrate", "run", job.dir, *RUN)
    assert done.exit_code == 2
    assert "not approved" in done.output and "orchestrate approve" in done.output
    assert not (job.dir / "events.jsonl").exists()
    approved = bashgym_cli("orchestrate", "approve", job.dir)
    assert approved.exit_code == 0 and Job.at(job.dir).plan().approved


def test_resolve_conflicts_gives_the_conflict_to_a_worker(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    both = "printf 'first line\\nfrom-b\\nfrom-c\\n' > shared.txt"
    tasks = [
        orch.plan_task(
            t,
            f"append\n```sh\n{wait}echo from-{t} >> shared.txt\n```\n```resolve\n{both}\n```\n",
            priority=p,
        )
        for t, p, wait in (("b", "high", ""), ("c", "normal", "sleep 2; "))
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate",
        "run",
        job.dir,
        *RUN,
        "--plugin",
        orch.shell_plugin,
        "--workers",
        "2",
        "--resolve-conflicts",
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    assert {t: s["outcome"] for t, s in result["tasks"].items()} == {"b": "merged", "c": "resolved"}
    assert orch.git(repo, "show", "bashgym/job/integration:shared.txt").splitlines() == [
        "first line",
        "from-b",
        "from-c",
    ]
    assert result["tasks"]["c"]["attempts"] == 1
    assert orch.finished_counts(job) == {"b": 1, "c": 1}
    merges = [e for e in orch.events(job) if e["type"] == "merge_result"]
    assert [(m["task_id"], m["outcome"]) for m in merges] == [("b", "merged"), ("c", "resolved")]


def test_a_worker_that_changes_nothing_failed(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("idle", "echo all done"),
        orch.shell_task("next", "echo > n.txt", deps=("idle",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "1"
    )
    assert done.exit_code == 1, done.output  # no task merged: the job failed
    result = job.result()
    assert result is not None and result["status"] == "failed"
    assert result["tasks"]["idle"]["state"] == "failed"
    assert result["tasks"]["idle"]["attempts"] == 2
    assert "changed no file" in result["tasks"]["idle"]["reason"]
    assert result["tasks"]["next"]["state"] == "blocked"
    assert "'idle'" in result["tasks"]["next"]["reason"]
    assert orch.finished_counts(job) == {"idle": 1, "next": 1}


class PickShell(Router[NoOptions]):
    """A router for the test: every task to `shell`, escalated to `shell` on a retry."""

    def executors(self, options: NoOptions) -> list[str]:
        return ["shell"]

    def route(self, task: Any, options: NoOptions, run: Any) -> Route:
        return Route(executor="shell", reason=f"{task.id} looks easy", escalate_to="shell")


def test_a_router_picks_each_executor(
    bashgym_cli: Any, no_scrub: None, register_plugin: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    class Plugin:
        @hookimpl
        def register_routers(self, register: Any) -> None:
            register("pick-shell", PickShell())

    register_plugin(Plugin(), "test-router")
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", "echo a > a.txt")])
    done = bashgym_cli(
        "orchestrate",
        "run",
        job.dir,
        "--router",
        "pick-shell",
        "-e",
        "local",
        "--plugin",
        orch.shell_plugin,
        "-k",
        "parquet",
    )
    assert done.exit_code == 0, done.output
    assert [e["executor"] for e in orch.events(job) if e["type"] == "task_started"] == ["shell"]
    rows = pd.read_parquet(next((job.dir).rglob("*.parquet")))
    trace = json.loads(rows[rows["kind"] == "worker"].iloc[0]["trace"])
    assert trace["extra"]["orchestrator"]["route"] == "router: a looks easy"


def test_the_router_sees_the_plans_estimates_and_files(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    """The confidence router's features of a routed task come from the plan: its estimated
    turns and the files it expects to touch (recorded where `bashgym router fit` reads them)."""
    pytest.importorskip("bashgym_routers_confidence", reason="needs bashgym-routers-confidence")
    from bashgym_routers_confidence.features import FEATURES_NAMESPACE

    from bashgym.store import RunStore

    task = orch.shell_task("a", "echo a > a.txt", estimated_turns=7, files=["src/one.py", "b.md"])
    job = orch.make_job(tmp_path / "job", repo, [task])
    done = bashgym_cli(
        "orchestrate", "run", job.dir, "--router", "confidence", "-e", "local",
        "--plugin", orch.shell_plugin, "-k", "parquet",
        "--set", "source.router_options.student=shell",
        "--set", "source.router_options.teacher=shell-teacher",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    store = RunStore(job.dir / "state.db")
    try:
        features = store.get(FEATURES_NAMESPACE, "a").result  # type: ignore[union-attr]
    finally:
        store.close()
    assert features["has_est_turns"] == 1.0
    assert features["log_est_turns"] == pytest.approx(math.log1p(7))
    assert features["file_refs"] == 2.0  # the plan's two files (the prompt names none)
    rows = pd.read_parquet(next((job.dir).rglob("*.parquet")))
    trace = json.loads(rows[rows["kind"] == "worker"].iloc[0]["trace"])
    assert trace["extra"]["orchestrator"]["route"].startswith("router: p(student passes)=")


class StreamFails(Sink[NoOptions]):
    """A sink that cannot write while the job runs (its rewrites have no event bus) but
    writes at the end: streaming falls back to the end's write, the job goes on."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def write(self, dataset: Any, options: Any, run: Any, output_format: str) -> Written:
        self.calls.append(len(dataset))
        if run.bus is None:
            raise OSError("disk full")
        out = Path(run.run_dir) / "at-end.txt"
        out.write_text(f"{len(dataset)}\n")
        return Written([out], len(dataset))


def test_a_sink_that_fails_as_the_job_goes_writes_at_its_end(
    bashgym_cli: Any, no_scrub: None, register_plugin: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    sink = StreamFails()

    class Plugin:
        @hookimpl
        def register_sinks(self, register: Any) -> None:
            register("stream-fails", sink)

    register_plugin(Plugin(), "test-sink")
    tasks = [orch.shell_task("a", "echo a > a.txt"), orch.shell_task("b", "echo b > b.txt")]
    job = orch.make_job(tmp_path / "job", repo, tasks)
    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "-k", "stream-fails",
        "--set", 'source.stream_sinks=["stream-fails"]',
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert job.result()["counts"] == {"merged": 2}  # type: ignore[index]
    assert sink.calls == [2, 3]  # one rewrite tried (then no more), the end's write: 2 + plan
    run = json.loads((job.dir / "run.json").read_text())
    assert any("writing as the job goes failed (OSError: disk full)" in n for n in run["notes"])
    assert run["counts"]["kept_by_sink"] == {"stream-fails": 3}
