"""A sharded run that two of its three shards stop: the same scenario for each backend that runs
shards (processes, ray), which must all hand back every shard's dropped rows on a failed round.

Why here: the scenario (which tasks the model refuses or stops answering) and what it must
leave behind are one thing; one copy keeps the backends' tests asking the same question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bashgym_testing.server import Fault


def stop_two_of_three_shards(model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a run of 12 seed rows `task 0`-`task 11` of the `solve` pipeline in three shards of
    four, two rows a batch: the model refuses tasks 1, 5 and 9 (one in each shard's first
    batch) for good (dropped), and stops answering tasks 7 and 11 (429s, given up after 1 s)
    in the second and third shards' second batches, so those shards stop. The settings reach
    the workers or shards through the environment."""
    for name, value in (("BUFFER_SIZE", "2"), ("MAX_CONCURRENT_ROW_GROUPS", "1"),
                        ("RATE_LIMIT_GIVE_UP_S", "1")):  # fmt: skip
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    refused = Fault.status(400, {"error": {"message": "no"}})
    for task in (1, 5, 9):
        model_server.add_rule(f"Solve: task {task}$", refused)
    for task in (7, 11):
        model_server.add_rule(f"Solve: task {task}$", Fault.status(429))


def assert_every_shards_drops(result: Any, out: Path) -> None:
    """The run of `stop_two_of_three_shards` failed with one of the stopped shards' errors, and
    its dropped.jsonl holds every shard's drops in seed order, as many as dropped_total;
    rows 4 and 8 were made in the stopped batches, 6-7 and 10-11 pending."""
    assert result.exit_code == 1 and "stopped answering" in result.output, result.output
    run = json.loads((out / "run.json").read_text())
    counts = run["counts"]
    assert run["status"] == "failed"
    assert (counts["stopped_round_rows"], counts["pending"]) == (2, 4)
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert [r["row"]["prompt"] for r in rows] == [f"Solve: task {i}" for i in (1, 5, 9)], rows
    assert len(rows) == counts["dropped_total"]
