"""Orchestration jobs over the API: a spec submitted is planned (`bashgym orchestrate plan`, the
planner answered by the scripted server), waits for approval with its DAG drawn, refuses a plan
edited into a cycle (422 naming it), is approved and carried out (`approve`, `run --yes`) by
the student executor against the scripted server in a real git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bashgym_testing import Reply


def task(tid: str, *deps: str) -> dict[str, Any]:
    return {
        "id": tid, "title": f"do {tid}", "description": f"the {tid} part", "priority": "normal",
        "depends_on": list(deps), "files": [f"src/{tid}.py"], "estimated_turns": 2,
        "budget_usd": 0.5, "prompt": f"Write src/{tid}.py.",
    }  # fmt: skip


PLAN = {"tasks": [task("core"), task("cli", "core"), task("docs", "core")]}
SPEC = """+++
repository = "{repo}"
workers = 2
+++
# Add a greeting command

The CLI greets the user by name.

## Acceptance criteria
- `tool greet Ada` prints `Hello, Ada!`
"""


def git_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "README.md").write_text("# greeter\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True, capture_output=True,
        )  # fmt: skip
    return root


def wait_for(served: Any, job_id: str, wanted: set[str], timeout: float = 240) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + timeout
    while True:
        job = served.client.get(f"/api/orchestrations/{job_id}").json()
        if job["status"] in wanted:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.5)


def submit(served: Any, scripted_models: Any, tmp_path: Path) -> str:
    """A spec planned into PLAN; the job's id once its plan waits for approval."""
    workdir = scripted_models.env.workdir
    with (workdir / "bashgym.toml").open("a") as fh:  # workers: the student, on the host
        fh.write('[orchestrator]\nexecutor = "student"\nenvironment = "local"\n')
    scripted_models.server.script(Reply(json.dumps(PLAN)))
    repo = git_repo(tmp_path / "repo")
    r = served.client.post(
        "/api/orchestrations", json={"spec": SPEC.format(repo=repo), "format": "md"}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.mark.slow
def test_plan_edit_approve_and_run(api, scripted_models, tmp_path):
    served = api()
    job_id = submit(served, scripted_models, tmp_path)
    job = wait_for(served, job_id, {"awaiting_approval", "failed"})
    assert job["status"] == "awaiting_approval", job
    assert [t["id"] for t in job["tasks"]] == ["core", "cli", "docs"]
    assert {t["state"] for t in job["tasks"]} == {"pending"}
    page = served.client.get(f"/jobs/{job_id}").text
    assert "<svg" in page and 'data-task="cli"' in page and 'id="approve"' in page

    cyclic = [task("core", "docs"), task("cli", "core"), task("docs", "cli")]
    r = served.client.put(f"/api/orchestrations/{job_id}/plan", json={"tasks": cyclic})
    assert r.status_code == 422, r.text
    assert "cycle: core -> docs -> cli -> core" in r.json()["detail"]
    r = served.client.put(f"/api/orchestrations/{job_id}/plan", json={"tasks": "no"})
    assert r.status_code == 422

    approved = served.client.post(f"/api/orchestrations/{job_id}/approve")
    assert approved.status_code == 200, approved.text
    assert served.client.post(f"/api/orchestrations/{job_id}/approve").status_code == 409
    events, end = served.events(job_id)
    assert end is not None, events
    job = served.client.get(f"/api/orchestrations/{job_id}").json()
    assert job["plan"]["approved"] is True
    types = {e["type"] for e in events}
    assert {"task_started", "task_finished"} <= types, types
    states = {t["id"]: t for t in job["tasks"]}
    assert all(t["worker"] == "student" for t in states.values()), states
    assert all(t["state"] not in ("pending", "running") for t in states.values()), states
    assert job["status"] in ("ok", "empty", "failed"), job
