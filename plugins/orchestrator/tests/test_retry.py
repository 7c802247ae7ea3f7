"""`orchestrate retry JOB TASK` on a real git repository: a task fails its check, blocks the
task behind it; the check is fixed in plan.json, the retry gets a fresh attempt budget, both
merge, the failed attempt's branch is kept, and a running job is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.plan import read_plan, write_plan
from bashgym_orchestrator.source import _attempt_row

from bashgym.store import RunStore, lock_run


@pytest.mark.slow
def test_failed_check_fixed_then_retry_merges(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("a", "echo A > a.txt", check="grep -q B a.txt"),  # wrong check
        orch.shell_task("b", "cat a.txt > b.txt", deps=("a",)),
        orch.shell_task("c", "echo C > c.txt"),  # independent: merges the first time
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f b.txt")
    run = ("-x", "shell", "-e", "local", "--plugin", orch.shell_plugin, "--retries", "0")
    first = bashgym_cli("orchestrate", "run", job.dir, *run)
    assert first.exit_code == 0, first.output
    states = {t: s["state"] for t, s in job.result()["tasks"].items()}  # type: ignore[index]
    assert states == {"a": "failed", "b": "blocked", "c": "merged"}

    # a job that is running (its lock held) is refused, and nothing changes
    held = lock_run(job.dir, "a test holding the job")
    assert held is not None
    try:
        busy = bashgym_cli("orchestrate", "retry", job.dir, "a")
    finally:
        held.close()
    assert busy.exit_code == 1 and "is running" in busy.output, busy.output
    assert json.loads((job.dir / "run.json").read_text())["status"] == "ok"
    unknown = bashgym_cli("orchestrate", "retry", job.dir, "nope")
    assert unknown.exit_code == 2 and "no task 'nope'" in unknown.output
    merged = bashgym_cli("orchestrate", "retry", job.dir, "c")
    assert merged.exit_code == 1 and "task 'c' is merged" in merged.output, merged.output

    plan = read_plan(job.plan_file)
    plan.task("a").check = "grep -q A a.txt"  # the fix
    write_plan(plan, job.plan_file)
    # retrying the blocked task retries the failed one it waits on; --retries 0 held for the
    # first run: only a fresh attempt budget lets attempt 2 start
    again = bashgym_cli("orchestrate", "retry", job.dir, "b")
    assert again.exit_code == 0, again.output
    assert "retrying a, b" in again.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 3}, result
    assert result["tasks"]["a"]["attempts"] == 2 and result["verify"]["ok"] is True
    assert orch.git(repo, "show", "bashgym/job/integration:b.txt") == "A"
    assert orch.git(repo, "show", "bashgym/job/a-attempt-1:a.txt") == "A"  # kept for a look
    merges = orch.git(repo, "log", "--merges", "--format=%s", "bashgym/job/integration")
    assert sorted(merges.splitlines()) == [f"Merge task {t}: task {t}" for t in "abc"]
    # each task ended once per run: c once, a and b once before the retry and once after
    assert orch.finished_counts(job) == {"a": 2, "b": 2, "c": 1}
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert {t: s["state"] for t, s in status["tasks"].items()} == dict.fromkeys("abc", "merged")
    assert status["status"] == "done"
    # the trace rows: a's failed attempt is not called merged (same branch name), its second is
    store = RunStore(job.dir / "state.db")
    try:
        task = store.get("tasks", "a")
        records = [i.result for i in store.items("attempts", "done") if i.key.startswith("a#")]
    finally:
        store.close()
    rows = [_attempt_row(job, r, task) for r in sorted(records, key=lambda r: r["number"])]
    assert [(r["attempt"], r["merge"]) for r in rows] == [(1, None), (2, "merged")]
