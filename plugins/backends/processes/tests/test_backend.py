"""The processes backend with two worker processes beside the driver: a pipeline run in shards
makes the rows of the same command without `--backend`, in seed order, with true counts and
usage in run.json; a worker killed mid-shard fails the run with one line, not a hang; agent
tasks stay in the driver; bad options are one line too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from bashgym_testing import Fault
from bashgym_testing.shards import assert_every_shards_drops, stop_two_of_three_shards

from bashgym.events import read_events

pytestmark = pytest.mark.slow  # DataDesigner runs in spawned worker processes: over 10 s


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def seeded(tmp_path: Path, tasks: list[str]) -> list[str]:
    seed = tmp_path / "tasks.csv"
    pd.DataFrame({"task": tasks}).to_csv(seed, index=False)
    return ["-s", "files", "--set", f"source.path={seed}", "-p", "solve", "-k", "parquet"]


# two processes: the driver and one worker; three: the driver and two workers
TWO = ("--backend", "processes", "--set", "backend.workers=2")
THREE = ("--backend", "processes", "--set", "backend.workers=3")


def test_shards_on_two_workers_and_the_driver_make_the_in_process_rows_counts_and_usage(
    bashgym_cli, scripted_models, model_server, plugin, tmp_path
):
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, [f"task {i}" for i in range(7)])]
    # one seed row's request fails for good: the runner drops its rows with a reason
    model_server.add_rule("Solve: task 4", Fault.status(400, {"error": {"message": "bad"}}))
    here = bashgym_cli(*args, "-n", "10", "--out", str(tmp_path / "here"))
    assert here.exit_code == 0, here.output
    asked = len(model_server.completions)
    there = bashgym_cli(*args, "-n", "10", "--out", str(tmp_path / "there"), *THREE,
                        "--set", "backend.shards=3")  # fmt: skip
    assert there.exit_code == 0, there.output
    asked = len(model_server.completions) - asked  # what the sharded run sent
    rows_here, rows_there = (
        pd.read_parquet(tmp_path / d / "data.parquet") for d in ("here", "there")
    )
    assert len(rows_here) == 9  # 10 asked (seed rows wrap: 0-6, 0-2), task 4's dropped
    assert rows_there[["task", "solution"]].equals(rows_here[["task", "solution"]])
    assert rows_there["solution"].str.contains("Solve: task").all()  # the model's echo
    a, b = summary(tmp_path / "here"), summary(tmp_path / "there")
    for key in ("generated", "requested", "kept", "dropped", "dropped_total"):
        assert a["counts"].get(key) == b["counts"].get(key), key
    assert b["counts"]["kept"] == 9 and sum(b["counts"]["dropped"].values()) == 1
    # usage comes back from the workers and is charged here: every request the server saw
    # (each shard's runner checks its model once first: two more than in-process)
    requests = [sum(m["requests"] for m in s["usage_by_model"].values()) for s in (a, b)]
    failed = [sum(m["failed_requests"] for m in s["usage_by_model"].values()) for s in (a, b)]
    assert requests[1] + failed[1] == asked
    assert requests[1] == requests[0] + 2 and failed == [1, 1]
    assert b["usage"]["output_tokens"] > a["usage"]["output_tokens"] > 0
    assert b["backend"] == {"name": "processes", "workers": 3, "shards_per_round": [3]}
    shards = sorted(p.name for p in (tmp_path / "there" / "shards" / "round-1").iterdir())
    assert shards == ["rows-0-4", "rows-4-7", "rows-7-10"]
    dropped = (tmp_path / "there" / "dropped.jsonl").read_text().splitlines()
    assert len(dropped) == 1 and "task 4" in dropped[0]
    events = read_events(tmp_path / "there" / "events.jsonl")
    assert {"rows_generated", "usage_charged"} <= {e.type for e in events}  # the workers', here


def test_a_worker_killed_mid_shard_fails_the_run_with_one_line(
    bashgym_cli, scripted_models, plugin, tmp_path
):
    # rows 0-3 go to the worker (the driver takes shards from the back): it dies building them
    tasks = ["please die", "task 1", "task 2", "task 3", "task 4", "task 5"]
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, tasks), "-n", "6"]
    done = bashgym_cli(*args, "--out", str(tmp_path / "run"), *TWO)
    assert done.exit_code != 0
    assert "a worker process died (killed by SIGKILL) while round 1's shards ran" in done.output
    assert "rows 0-3 were not kept" in done.output  # the driver's own shard finished
    run = summary(tmp_path / "run")
    assert run["status"] == "failed" and "WorkerDied" in run["error"]
    assert not (tmp_path / "run" / "data.parquet").exists()


def test_top_up_rounds_in_shards_make_the_in_process_rows_and_counts(
    bashgym_cli, scripted_models, model_server, plugin, tmp_path
):
    """--top-up: each round goes to the backend in shards, the pool kept between rounds."""
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, ["task 0", "task 1", "task 2"])]
    args += ["-n", "6", "--top-up"]
    model_server.add_rule("Solve: task 1", Fault.status(400, {"error": {"message": "bad"}}))
    here = bashgym_cli(*args, "--out", str(tmp_path / "here"))
    there = bashgym_cli(*args, "--out", str(tmp_path / "there"), *TWO)
    assert here.exit_code == 0 and there.exit_code == 0, here.output + there.output
    a, b = summary(tmp_path / "here"), summary(tmp_path / "there")
    rows_here, rows_there = (
        pd.read_parquet(tmp_path / d / "data.parquet") for d in ("here", "there")
    )
    assert len(rows_here) == 6 and not rows_here["task"].eq("task 1").any()
    assert rows_there[["task", "solution"]].equals(rows_here[["task", "solution"]])
    assert len(a["rounds"]) >= 2 and len(b["rounds"]) == len(a["rounds"])
    for key in ("generated", "requested", "kept", "dropped", "dropped_total"):
        assert a["counts"].get(key) == b["counts"].get(key), key
    assert b["backend"]["shards_per_round"] == [2] * len(b["rounds"])


def test_a_run_a_dead_worker_stopped_resumes_with_the_same_command(
    bashgym_cli, scripted_models, plugin, tmp_path, monkeypatch
):
    monkeypatch.setenv("PROCESSES_TEST_DIED", str(tmp_path / "died"))  # dies the first time
    tasks = ["please die", "task 1", "task 2", "task 3", "task 4", "task 5"]
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, tasks), "-n", "6"]
    first = bashgym_cli(*args, "--out", str(tmp_path / "run"), *TWO)
    assert first.exit_code == 1 and "a worker process died" in first.output
    again = bashgym_cli(*args, "--out", str(tmp_path / "run"), *TWO)
    assert again.exit_code == 0, again.output
    rows = pd.read_parquet(tmp_path / "run" / "data.parquet")
    assert list(rows["task"]) == tasks  # each row once, in seed order
    run = summary(tmp_path / "run")
    assert run["status"] == "ok" and run["counts"]["kept"] == 6
    assert run["counts"]["generated"] == 6  # the driver's finished shard not counted twice


def test_agent_tasks_run_in_the_driver_process(bashgym_cli, scripted_models, plugin, tmp_path):
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("write a\nwrite b\n")
    args = ["run", "--plugin", str(plugin), "-s", "prompts", "--set", f"source.path={tasks}",
            "-x", "agent", "-e", "local", "-k", "parquet"]  # fmt: skip
    done = bashgym_cli(*args, "--out", str(tmp_path / "run"), *TWO)
    assert done.exit_code == 0, done.output
    rows = pd.read_parquet(tmp_path / "run" / "data.parquet")
    assert sorted(rows["status"]) == ["success", "success"]
    assert all(text.endswith(f" in {os.getpid()}") for text in rows["final_text"])
    assert summary(tmp_path / "run")["tasks"] == {"success": 2, "running": 0}


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_bad_worker_count_is_one_line(bashgym_cli, scripted_models, plugin, tmp_path, value):
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, ["task 0"])]
    done = bashgym_cli(*args, "--backend", "processes", "--set", f"backend.workers={value}")
    assert done.exit_code == 2
    assert done.output.startswith("error: backend 'processes': workers: "), done.output
    assert done.output.count("\n") == 1  # one line


def test_one_process_runs_every_shard_itself(bashgym_cli, scripted_models, plugin, tmp_path):
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, ["a", "b", "c"]), "-n", "5"]
    one = ("--backend", "processes", "--set", "backend.workers=1", "--set", "backend.shards=2")
    done = bashgym_cli(*args, "--out", str(tmp_path / "run"), *one)
    assert done.exit_code == 0, done.output
    rows = pd.read_parquet(tmp_path / "run" / "data.parquet")
    assert list(rows["task"]) == ["a", "b", "c", "a", "b"]  # seed order across both shards
    assert summary(tmp_path / "run")["backend"]["shards_per_round"] == [2]


def test_a_run_two_shards_stopped_writes_every_shards_drops(
    bashgym_cli, scripted_models, model_server, plugin, tmp_path, monkeypatch
):
    """Three shards of four rows, two rows a batch: the model refuses one task of each shard's
    first batch for good (dropped), and stops answering tasks 7 and 11 (429s) in the second
    and third shards' second batches, so those shards stop and the run raises one of their
    errors. dropped.jsonl holds every shard's drops in seed order, as many as dropped_total.
    Before: the second shard's task 5 only."""
    stop_two_of_three_shards(model_server, monkeypatch)
    args = ["run", "--plugin", str(plugin), *seeded(tmp_path, [f"task {i}" for i in range(12)])]
    out = tmp_path / "run"
    result = bashgym_cli(*args, "-n", "12", "--out", str(out), *THREE, "--set", "backend.shards=3")
    assert_every_shards_drops(result, out)
