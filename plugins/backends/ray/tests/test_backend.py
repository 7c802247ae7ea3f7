"""The ray backend on a local Ray instance (two CPUs): a run makes the same rows and counts as
the same command without `--backend`, for a pipeline (in shards) and for an agent run (each task
a Ray task); a worker process killed mid-task is re-run once, nothing lost or kept twice."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pandas as pd
import pytest
from bashgym_testing import Fault
from bashgym_testing.shards import assert_every_shards_drops, stop_two_of_three_shards

from bashgym.events import read_events
from bashgym.records import trace_from_row

pytestmark = pytest.mark.slow  # a local Ray instance and DataDesigner runs: over 10 s


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def here_and_on_ray(
    bashgym_cli, model_server, plugin: Path, tmp_path: Path, *, tasks: int, failing: str,
    args: list[str], shards: int,
) -> tuple[pd.DataFrame, pd.DataFrame, dict, dict]:  # fmt: skip
    """The same pipeline run in-process and on Ray (`shards` shards a round), `failing`'s
    request refused for good: both runs' rows and run.json."""
    seed = tmp_path / "tasks.csv"
    pd.DataFrame({"task": [f"task {i}" for i in range(tasks)]}).to_csv(seed, index=False)
    # one seed row's request fails for good: the runner drops its rows with a reason
    model_server.add_rule(f"Solve: {failing}", Fault.status(400, {"error": {"message": "bad"}}))
    common = [
        "run", "--plugin", str(plugin), "-s", "files", "--set", f"source.path={seed}",
        "-p", "solve", *args, "-k", "parquet",
    ]  # fmt: skip
    here = bashgym_cli(*common, "--out", str(tmp_path / "here"))
    assert here.exit_code == 0, here.output
    on_ray = ("--backend", "ray", "--set", f"backend.shards={shards}")
    there = bashgym_cli(*common, "--out", str(tmp_path / "ray"), *on_ray)
    assert there.exit_code == 0, there.output
    rows = [pd.read_parquet(tmp_path / side / "data.parquet") for side in ("here", "ray")]
    return rows[0], rows[1], summary(tmp_path / "here"), summary(tmp_path / "ray")


def test_a_pipeline_in_shards_makes_the_in_process_rows_and_counts(
    local_ray, bashgym_cli, scripted_models, model_server, plugin, tmp_path
):
    rows_here, rows_ray, a, b = here_and_on_ray(
        bashgym_cli, model_server, plugin, tmp_path, tasks=7, failing="task 4",
        args=["-n", "10"], shards=3,
    )  # fmt: skip
    assert len(rows_here) == 9  # 10 asked (seed rows wrap: 0-6, 0-2), task 4's dropped
    assert rows_ray[["task", "solution"]].equals(rows_here[["task", "solution"]])
    assert rows_ray["solution"].str.contains("Solve: task").all()  # the model's echo
    for key in ("generated", "requested", "kept", "dropped", "dropped_total"):
        assert a["counts"].get(key) == b["counts"].get(key), key
    assert sum(a["counts"]["dropped"].values()) == 1
    # usage comes back and is charged on the driver: the same requests, plus the one check
    # request each runner call makes before its first round (two more shards, two more)
    requests = [sum(m["requests"] for m in s["usage_by_model"].values()) for s in (a, b)]
    assert requests[1] == requests[0] + 2 and requests[0] >= 10
    assert b["usage"]["output_tokens"] > a["usage"]["output_tokens"] > 0
    assert b["backend"]["name"] == "ray" and b["backend"]["shards_per_round"] == [3]
    shards = sorted(p.name for p in (tmp_path / "ray" / "shards" / "round-1").iterdir())
    assert shards == ["rows-0-4", "rows-4-7", "rows-7-10"]
    dropped = [json.loads(x) for x in (tmp_path / "ray" / "dropped.jsonl").read_text().splitlines()]
    assert len(dropped) == 1 and "task 4" in json.dumps(dropped[0]["row"])


def test_top_up_rounds_on_ray_make_the_in_process_rows_and_counts(
    local_ray, bashgym_cli, scripted_models, model_server, plugin, tmp_path
):
    """--top-up: each round is handed to the backend in shards; the rounds, rows and counts are
    the in-process run's (a seed row whose request always fails loses its rows every round)."""
    rows_here, rows_ray, a, b = here_and_on_ray(
        bashgym_cli, model_server, plugin, tmp_path, tasks=3, failing="task 1",
        args=["-n", "6", "--top-up"], shards=2,
    )  # fmt: skip
    assert len(rows_here) == 6 and not rows_here["task"].eq("task 1").any()
    assert rows_ray[["task", "solution"]].equals(rows_here[["task", "solution"]])
    assert len(a["rounds"]) >= 2  # the first round alone cannot keep 6
    assert len(b["rounds"]) == len(a["rounds"])
    for key in ("generated", "requested", "kept", "dropped", "dropped_total"):
        assert a["counts"].get(key) == b["counts"].get(key), key
    assert len(b["backend"]["shards_per_round"]) == len(b["rounds"])


def agent_args(plugin: Path, tasks: Path, prompts: list[str]) -> list[str]:
    tasks.write_text("\n".join(prompts) + "\n")
    return [
        "run", "--plugin", str(plugin), "-s", "prompts", "--set", f"source.path={tasks}",
        "-x", "agent", "-e", "local", "-k", "parquet",
    ]  # fmt: skip


SECRET = "ghp_" + "x7Kd9Qm2Lp4Rt6Vw8Yz1Bc3Fg5Hj7Nq9Sa2D"  # a GitHub token's shape


def test_an_agent_run_on_ray_keeps_the_in_process_rows_and_counts(
    local_ray, bashgym_cli, scripted_models, plugin, tmp_path, monkeypatch
):
    from bashgym_backends_ray.slots import Slots

    shipped: list[bytes] = []  # what the driver sends to the slots, as Ray would pickle it
    call = Slots.call

    async def recording(self, bp, fn, args):
        shipped.append(pickle.dumps((bp, args)))
        return await call(self, bp, fn, args)

    monkeypatch.setattr(Slots, "call", recording)
    prompts = ["write a", "write b", "please fail", f"write c with {SECRET}"]
    common = agent_args(plugin, tmp_path / "tasks.txt", prompts)
    here = bashgym_cli(*common, "--out", str(tmp_path / "here"))
    assert here.exit_code == 0, here.output
    there = bashgym_cli(*common, "--out", str(tmp_path / "ray"), "--backend", "ray")
    assert there.exit_code == 0, there.output
    # workers get scrubbed rows, and keys only by their env var's name
    assert len(shipped) == 4 and all(b"BASHGYM_SCRIPTED_KEY" in blob for blob in shipped)
    assert all(SECRET.encode() not in blob and b"scripted-key" not in blob for blob in shipped)
    prompts[-1] = "write c with"  # its secret redacted (the row keeps the rest)

    def rows(run: str) -> pd.DataFrame:
        frame = pd.read_parquet(tmp_path / run / "data.parquet").sort_values("prompt")
        return frame.reset_index(drop=True)

    a, b = rows("here"), rows("ray")
    assert [p[:12] for p in b["prompt"]] == sorted(p[:12] for p in prompts)
    for column in ("task_id", "status", "reason", "verified", "final_text"):
        assert list(a[column]) == list(b[column]), column
    assert [list(f) for f in b["workspace_files"]] == [[], ["out.txt"], ["out.txt"], ["out.txt"]]
    trace = trace_from_row(b.iloc[1].to_dict())
    assert [m.content for m in trace.messages] == ["write a", "did write a"]
    kept = Path(b.iloc[0]["workspace"])  # the failed task's workspace, kept for a look
    assert kept.is_dir() and kept.parent == tmp_path / "ray" / "workspaces"
    assert summary(tmp_path / "ray")["tasks"] == summary(tmp_path / "here")["tasks"]
    assert summary(tmp_path / "ray")["tasks"] == {"success": 3, "failed": 1, "running": 0}
    events = read_events(tmp_path / "ray" / "events.jsonl")
    assert sum(e.type == "task_started" for e in events) == 4  # the workers' events, here
    assert sum(e.type == "task_finished" for e in events) == 4


def test_a_worker_killed_mid_task_is_rerun_once_and_kept_once(
    local_ray, bashgym_cli, plugin, tmp_path
):
    prompts = ["write a", "die here", "write b"]
    (tmp_path / "starts").mkdir()  # the agent counts each task's starts there
    args = agent_args(plugin, tmp_path / "tasks.txt", prompts)
    done = bashgym_cli(*args, "--out", str(tmp_path / "run"), "--backend", "ray")
    assert done.exit_code == 0, done.output
    starts = {p.name: int(p.read_text()) for p in (tmp_path / "starts").iterdir()}
    rows = pd.read_parquet(tmp_path / "run" / "data.parquet")
    by_prompt = dict(zip(rows["prompt"], rows["task_id"], strict=True))
    assert sorted(by_prompt) == sorted(prompts)  # nothing lost, nothing twice
    assert starts[by_prompt["die here"]] == 2  # killed once, Ray ran it again
    assert starts[by_prompt["write a"]] == starts[by_prompt["write b"]] == 1
    assert set(rows["status"]) == {"success"}
    finished = [
        e for e in read_events(tmp_path / "run" / "events.jsonl") if e.type == "task_finished"
    ]
    assert len(finished) == 3


def test_a_slot_runs_several_agent_tasks_at_once_in_its_one_process(
    local_ray, bashgym_cli, plugin, tmp_path
):
    """`slot_tasks=3` on one slot (task_cpus=2 of the instance's 2): a run of concurrency 3
    runs its tasks side by side as coroutines of that slot's process, as the engine would."""
    (tmp_path / "together").mkdir()
    args = agent_args(plugin, tmp_path / "tasks.txt", ["write a", "write b", "write c"])
    shape = ["--set", "backend.task_cpus=2", "--set", "backend.slot_tasks=3"]
    done = bashgym_cli(*args, "-c", "3", "--out", str(tmp_path / "run"), "--backend", "ray",
                       *shape)  # fmt: skip
    assert done.exit_code == 0, done.output
    run = summary(tmp_path / "run")
    assert run["backend"]["slots"] == 1 and run["tasks"]["success"] == 3
    seen = [p.read_text().split(",") for p in (tmp_path / "together").glob("*.saw")]
    assert len(seen) == 3
    assert len({pid for pids in seen for pid in pids}) == 1  # one process ran them all
    assert max(len(pids) for pids in seen) >= 2  # and at the same time


def test_a_run_two_shards_stopped_writes_every_shards_drops(
    local_ray, bashgym_cli, scripted_models, model_server, plugin, tmp_path, monkeypatch
):
    """Three shards of four rows, two rows a batch: the model refuses one task of each shard's
    first batch for good (dropped), and stops answering tasks 7 and 11 (429s) in the second
    and third shards' second batches, so those shards stop and the run raises one of their
    errors. dropped.jsonl holds every shard's drops in seed order, as many as dropped_total.
    Before: the second shard's task 5 only."""
    stop_two_of_three_shards(model_server, monkeypatch)
    seed = tmp_path / "tasks.csv"
    pd.DataFrame({"task": [f"task {i}" for i in range(12)]}).to_csv(seed, index=False)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "--plugin", str(plugin), "-s", "files", "--set", f"source.path={seed}",
        "-p", "solve", "-k", "parquet", "-n", "12", "--out", str(out),
        "--backend", "ray", "--set", "backend.shards=3",
    )  # fmt: skip
    assert_every_shards_drops(result, out)
