"""Orchestration jobs over the API: a spec submitted is planned (`bashgym orchestrate plan`, the
planner answered by the scripted server), waits for approval with its DAG drawn, refuses a plan
edited into a cycle (422 naming it), is approved and carried out (`approve`, `run --yes`) by
the student executor against the scripted server in a real git repository."""

from __future__ import annotations

import time
from typing import Any

import pytest


def task(tid: str, *deps: str) -> dict[str, Any]:
    return {"id": tid, "title": f"do {tid}", "prompt": f"Write {tid}.", "depends_on": list(deps)}


def wait_for(served: Any, job_id: str, wanted: set[str], timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = served.client.get(f"/api/orchestrations/{job_id}").json()
        if job["status"] in wanted:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_plan_edit_approve_and_run(api, orchestration_spec):
    served = api()
    r = served.client.post("/api/orchestrations", json={"spec": orchestration_spec})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
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
    # a plan edited to hold a secret is refused, as a job's spec is: plan.json keeps nothing raw
    planted = task("core")
    planted["prompt"] = "Use ghp_9lroW68HZdtRFiarR2WR3xerXChODzLxn4a0 to push."
    r = served.client.put(f"/api/orchestrations/{job_id}/plan", json={"tasks": [planted]})
    assert r.status_code == 422, r.text
    assert "the plan holds a secret at tasks[0].prompt (github-token)" in r.json()["detail"]
    assert "ghp_9lroW68" not in r.text
    assert [
        t["id"] for t in served.client.get(f"/api/orchestrations/{job_id}").json()["tasks"]
    ] == ["core", "cli", "docs"]

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
    assert {t["state"] for t in states.values()} == {"merged"}, states
    assert {t["merge"] for t in states.values()} == {"merged"}, states  # each wrote its file
    assert all(t["branch"] for t in states.values()), states
    assert job["merges"][0]["task_id"] == "core"  # cli and docs start from it
    assert job["status"] == "ok", job
    listed = {j["id"]: j for j in served.client.get("/api/jobs").json()}
    assert listed[job_id]["kind"] == "orchestration" and listed[job_id]["status"] == "ok"
    retry = served.client.post(f"/api/orchestrations/{job_id}/tasks/core/retry")
    # core merged: nothing to retry (a failed task's retry is tested with the orchestrator's
    # own `orchestrate retry` test, which this endpoint runs)
    assert retry.status_code == 409 and "is merged" in retry.json()["detail"], retry.text
    missing = served.client.post(f"/api/orchestrations/{job_id}/tasks/nope/retry")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
