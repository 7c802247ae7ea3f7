"""`orchestrate status` and job.json say one word for how a job stands (`status.job_state`):
job.json's for a job that ended or stopped, the run's for one that crashed; a resume stopped
before it started a task does not leave job.json saying `cancelled` from the stop before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bashgym_orchestrator.source import _restamp
from bashgym_orchestrator.status import job_state


def test_the_job_word_is_job_jsons_where_the_run_agrees() -> None:
    assert job_state({"status": "running"}, {"status": "running"}, running=True) == "running"
    assert job_state({"status": "ok"}, {"status": "failed"}, running=False) == "failed"
    stopped = {"status": "interrupted"}
    assert job_state(stopped, {"status": "cancelled"}, running=False) == "cancelled"
    assert job_state(stopped, {"status": "interrupted"}, running=False) == "interrupted"
    # `orchestrate retry` reopens a finished job: interrupted, whatever job.json last said
    assert job_state(stopped, {"status": "done"}, running=False) == "interrupted"
    # killed (run.json and job.json still say running, its pid gone), or an error
    assert job_state({"status": "running"}, {"status": "running"}, running=False) == "interrupted"
    assert job_state({"status": "failed"}, {"status": "running"}, running=False) == "failed"


def test_a_resume_stopped_early_is_interrupted_not_cancelled(
    repo: Path, tmp_path: Path, orch: Any
) -> None:
    job = orch.make_job(tmp_path / "job", repo, [orch.shell_task("a", "true")])
    job.result_file.write_text(json.dumps({"status": "cancelled", "counts": {"pending": 1}}))
    _restamp(job, "interrupted")
    assert job.result() == {"status": "interrupted", "counts": {"pending": 1}}
    job.result_file.write_text(json.dumps({"status": "done"}))
    _restamp(job, "interrupted")  # a finished job's word stays
    assert job.result() == {"status": "done"}
