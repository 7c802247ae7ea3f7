"""How a job that ran says how it ended: a cost no model priced is `unknown` (null and the
models named), never $0, in job.json, the terminal and `orchestrate status`, while a known $0
stays $0; and a job where no task merged ends `failed`, exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

RUN = ("-x", "shell", "-e", "local")


@pytest.mark.slow
def test_a_cost_no_model_priced_is_unknown_not_zero(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("a", "echo A > a.txt", cost="unknown"),  # a model with no price
        orch.shell_task("b", "echo B > b.txt"),  # priced: $0
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli("orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin)

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 2}
    assert result["cost_usd"] is None and result["cost_unknown_for"] == ["shell"]
    assert result["planning_cost_usd"] == 0.0  # no planning (a plan made by hand): a known 0
    assert result["tasks"]["a"]["cost_usd"] is None
    assert result["tasks"]["b"]["cost_usd"] == 0.0
    said = " ".join(done.stdout.split())  # the terminal's lines wrap at 80 columns
    assert "cost unknown (no price for shell)" in said and "$0.0000" not in said
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert status["cost_usd"] is None and status["cost_unknown_for"] == ["shell"]
    assert status["tasks"]["a"]["cost_usd"] is None and status["tasks"]["b"]["cost_usd"] == 0.0
    table = bashgym_cli("orchestrate", "status", job.dir).stdout
    row_a = next(line for line in table.splitlines() if line.startswith("a "))
    row_b = next(line for line in table.splitlines() if line.startswith("b "))
    assert "unknown" in row_a and "$0.0000" not in row_a
    assert "$0.0000" in row_b


@pytest.mark.slow
def test_a_job_where_no_task_merged_failed(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any
) -> None:
    tasks = [
        orch.shell_task("a", "echo A > a.txt", check="false"),  # its check always fails
        orch.shell_task("b", "echo B > b.txt", deps=("a",)),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, *RUN, "--plugin", orch.shell_plugin, "--retries", "0"
    )

    assert done.exit_code == 1, done.output
    result = job.result()
    assert result is not None and result["status"] == "failed"
    assert result["counts"] == {"failed": 1, "blocked": 1}
    assert "failed (no task merged)" in " ".join(done.stdout.split())
    status = json.loads(bashgym_cli("orchestrate", "status", job.dir, "--json").stdout)
    assert status["status"] == "failed"
    again = bashgym_cli("orchestrate", "resume", job.dir)  # it ended: `retry` is the way on
    assert again.exit_code == 2 and "has finished" in again.output
