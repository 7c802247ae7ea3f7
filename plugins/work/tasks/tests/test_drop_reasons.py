"""Tasks that fail their checks alike are dropped for one reason: the kind of failure (`check
failed (exit 1)`), so run.json's `dropped` adds them up; each task's own command stays in its
row (`check`, beside `check_exit` and `check_output`) and in its trace."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from bashgym_testing import ScriptedExecutor

from bashgym import hookimpl


class Writer(ScriptedExecutor):
    """Writes `hi` in the task's file, except for the tasks whose prompt says `wrong`."""

    name = "writer"

    async def run(self, task, options, ctx):  # type: ignore[no-untyped-def]
        text = "bye" if "wrong" in task.prompt else "hi"
        self.enqueue("done", write={f"{task.id}.txt": text})
        return await super().run(task, options, ctx)


def test_tasks_failing_their_checks_alike_are_one_drop_reason(
    bashgym_cli: Any, tmp_path: Any, register_plugin: Any
) -> None:
    class Plugin:
        @hookimpl
        def register_executors(self, register):  # type: ignore[no-untyped-def]
            register("writer", Writer())

    register_plugin(Plugin(), "drop-reasons-test")
    ids = [f"t{i}" for i in range(5)]
    tasks = pd.DataFrame(
        {
            "id": ids,
            "prompt": ["wrong" if i in ("t0", "t2", "t3") else "right" for i in ids],
            "check": [f"grep -qx hi {i}.txt" for i in ids],
        }
    )
    csv = tmp_path / "tasks.csv"
    tasks.to_csv(csv, index=False)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-x", "writer", "-e", "local",
        "-k", "parquet", "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    reason = "task failed: check failed (exit 1)"
    run = json.loads((out / "run.json").read_text())
    assert run["counts"]["dropped"] == {f"sink nemo-jsonl: {reason}": 3}, run["counts"]
    assert sorted(run["dropped_rows"][f"sink nemo-jsonl: {reason}"]) == ["t0", "t2", "t3"]
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert {d["reason"] for d in dropped} == {reason}, dropped

    rows = pd.read_parquet(out / "data.parquet").set_index("task_id")
    failed = rows.loc[["t0", "t2", "t3"]]
    assert set(failed["reason"]) == {"check failed (exit 1)"}
    assert list(failed["check"]) == [
        "grep -qx hi t0.txt",
        "grep -qx hi t2.txt",
        "grep -qx hi t3.txt",
    ]
    assert list(failed["check_exit"]) == [1, 1, 1]
    trace = json.loads(failed.loc["t2", "trace"])
    assert trace["outcome"]["error_message"] == "check failed (exit 1): grep -qx hi t2.txt"
    assert rows.loc["t1", "check"] == "grep -qx hi t1.txt" and bool(rows.loc["t1", "verified"])
