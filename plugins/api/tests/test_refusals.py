"""What the API refuses, and that the client reads why: a job spec holding a secret, a
WebSocket to no job or from a bad offset, a push request naming a server variable it may not
read or carrying a key it does not read, a body that is no JSON. A real uvicorn, a real HTTP
client and a real WebSocket client; the jobs looked at are folders made by the server's own
`Jobs` (no child is started unless a test says so)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pandas as pd
import pytest
from bashgym_api.jobs import Jobs
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

TOKEN = "ghp_9lroW68HZdtRFiarR2WR3xerXChODzLxn4a0"  # shaped as a GitHub token; no real one


def made_job(jobs_root: Path) -> str:
    """A job folder as the server makes one (job.json), with two lines of events."""
    job_dir = Jobs(jobs_root).new_dir("samplers", "run", {"spec": {"pipeline": "samplers"}})
    lines = [{"type": "note", "text": "one"}, {"type": "note", "text": "two"}]
    (job_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return job_dir.name


def test_a_job_spec_holding_a_secret_is_refused_and_nothing_is_stored(api, jobs_root):
    """Before: 201, and job.json, job.toml and `GET /api/jobs/ID`'s spec kept the token raw
    (only run.toml was redacted). Now: 422 naming where it is, without echoing it."""
    served = api()
    spec = {
        "num_records": 3,
        "pipeline": {
            "plugin": "samplers",
            "categories": {"cred": [f"token {TOKEN}", "none"]},
            "expressions": {"note": f"key={{{{ cred }}}} {TOKEN}"},
        },
        "sinks": ["parquet"],
    }
    r = served.client.post("/api/jobs", json=spec)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "pipeline.categories.cred[0] (github-token)" in detail
    assert "pipeline.expressions.note (github-token)" in detail
    assert "api_key_env" in detail and "[scrub] allow" in detail
    assert TOKEN not in detail and "\n" not in detail
    assert not jobs_root.exists() or not any(jobs_root.iterdir())  # no job folder, no file
    # an orchestration's spec text and an edited plan are stored as a job's spec is
    r = served.client.post("/api/orchestrations", json={"spec": f"# Fix\n\nUse {TOKEN}.\n"})
    assert r.status_code == 422 and "the spec holds a secret at spec (github-token)" in r.text
    assert TOKEN not in r.text
    assert not jobs_root.exists() or not any(jobs_root.iterdir())
    # a bad value is answered with the value redacted (the spec is refused before it is kept)
    bad = {"pipeline": {"plugin": "samplers", "categories": TOKEN}, "sinks": ["parquet"]}
    r = served.client.post("/api/jobs", json=bad)
    assert r.status_code == 422 and TOKEN not in r.text, r.text


def test_websocket_refusals_reach_the_client_with_code_and_reason(api, jobs_root):
    """Before: every refusal was a bare HTTP 403 at the handshake (closed before accept())."""
    served = api()
    job_id = made_job(jobs_root)
    cases = {
        "/ws/jobs/no-such-job?offset=0": (4404, "no job 'no-such-job'"),
        f"/ws/jobs/{job_id}?offset=5": (4422, "offset '5' is not the start of a line"),
        f"/ws/jobs/{job_id}?offset=99999": (4422, "offset '99999' is not the start"),
        f"/ws/jobs/{job_id}?offset=-1": (4422, "offset '-1' is not the start"),
        f"/ws/jobs/{job_id}?offset=abc": (4422, "offset 'abc' is not the start"),
    }
    for path, (code, reason) in cases.items():
        with connect(served.ws_url + path, open_timeout=30) as ws:
            with pytest.raises(ConnectionClosedError):
                ws.recv(timeout=30)
            assert ws.close_code == code, (path, ws.close_code, ws.close_reason)
            assert reason in ws.close_reason, (path, ws.close_reason)
    # a good offset still streams: the events after it, then the end
    with connect(f"{served.ws_url}/ws/jobs/{job_id}?offset=0", open_timeout=30) as ws:
        first, end = json.loads(ws.recv(timeout=30)), json.loads(ws.recv(timeout=30))
    assert [e["text"] for e in first["events"]] == ["one", "two"]
    assert end == {"end": True, "status": "pending", "offset": first["offset"]}


def test_push_requests_name_what_they_refuse(api, jobs_root, monkeypatch):
    """Before: any server env var was accepted as `token_env` (PATH: 202), a `token` key was
    dropped silently, an unset HF_TOKEN was found by the child, whose error named the CLI flag
    `--token-env`."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("MY_HUB_TOKEN", "hf_abc")
    served = api()
    job_id = made_job(jobs_root)
    push = f"/api/jobs/{job_id}/push"
    cases = {
        "token: a push request never carries the token": {"repo": "me/x", "token": "hf_abc"},
        "repos: unknown key in a push request (keys: repo, token_env, private)": {
            "repo": "me/x", "repos": "me/y"
        },
        "token_env: 'PATH' is not a variable this server lets a push read (allowed: HF_TOKEN;": {
            "repo": "me/x", "token_env": "PATH"
        },
        "token_env: 'MY_HUB_TOKEN' is not a variable": {
            "repo": "me/x", "token_env": "MY_HUB_TOKEN"
        },
        "token_env: $HF_TOKEN is not set in the server's environment": {"repo": "me/x"},
        "private: true (the default) or false": {"repo": "me/x", "private": "no"},
    }  # fmt: skip
    for expected, body in cases.items():
        r = served.client.post(push, json=body)
        assert r.status_code == 422 and expected in r.json()["detail"], (body, r.text)
        assert "--token-env" not in r.text and "hf_abc" not in r.text
    assert not (jobs_root / job_id / "push.json").exists()  # no push was started
    # a variable the server's [api] push_token_envs names is accepted (then: the job's state)
    allowing = api(push_token_envs=["HF_TOKEN", "MY_HUB_TOKEN"])
    r = allowing.client.post(push, json={"repo": "me/x", "token_env": "MY_HUB_TOKEN"})
    assert r.status_code == 409 and "has not finished" in r.json()["detail"], r.text


def test_bad_json_and_unknown_preview_keys_are_said_plainly(api):
    """Before: `24: JSON decode error`; a preview body's unknown key was ignored (200)."""
    served = api()
    r = served.client.post(
        "/api/jobs",
        content=b'{"pipeline": "samplers",',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422
    assert r.json()["detail"] == (
        "request body is not valid JSON (at character 24): "
        "Expecting property name enclosed in double quotes"
    )
    r = served.client.post("/api/pipelines/samplers/preview", json={"num_records": 2, "extra": 1})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("extra: unknown key in a preview request (keys: ")
    r = served.client.post("/api/validate", json={"pipeline": "samplers", "option": {}})
    assert r.status_code == 422 and "option: unknown key in a validate request" in r.text


@pytest.mark.slow  # a real run and a real `bashgym push` child: ~20 s on two busy cores
def test_push_endpoint_with_plugin_tables_in_settings(api, bashgym_env, jobs_root, monkeypatch):
    """Before: a bashgym.toml with `[api]` (as the README's API section sets it) made every
    push of a nemo-jsonl job fail ('Extra inputs are not permitted'). Now the push gets as far
    as the Hub, here an address that refuses connections: one line in its log, exit 1."""
    bashgym_env.user_config.parent.mkdir(parents=True, exist_ok=True)
    bashgym_env.user_config.write_text(
        f'[api]\njobs_dir = "{jobs_root}"\n\n[designer]\nbuffer_size = 10\n'
    )
    csv = bashgym_env.workdir / "qa.csv"
    pd.DataFrame({"prompt": ["2+2?", "Capital?"], "response": ["4", "Paris"]}).to_csv(
        csv, index=False
    )
    with socket.socket() as refusing:  # bound, never listening: connections are refused
        refusing.bind(("127.0.0.1", 0))
        hub = f"http://127.0.0.1:{refusing.getsockname()[1]}"
        monkeypatch.setenv("HF_ENDPOINT", hub)  # the push child's huggingface_hub reads it
        monkeypatch.setenv("HF_TOKEN", "hf_push_s3cr3tvalue")
        served = api()
        spec = {"source": {"plugin": "files", "path": str(csv)}, "sinks": ["nemo-jsonl"]}
        created = served.client.post("/api/jobs", json=spec)
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        job = served.wait_status(job_id, {"ok", "failed", "empty"})
        assert job["status"] == "ok", served.client.get(f"/api/jobs/{job_id}/log").json()
        r = served.client.post(f"/api/jobs/{job_id}/push", json={"repo": "me/qa"})
        assert r.status_code == 202, r.text
        deadline = time.monotonic() + 120
        while (push := served.client.get(f"/api/jobs/{job_id}/push").json())["exit_code"] is None:
            assert time.monotonic() < deadline, push
            time.sleep(0.3)
    assert push["exit_code"] == 1, push
    assert push["log"].strip().splitlines() == [
        f"error: push: cannot reach the Hub ({hub}): [Errno 111] Connection refused"
    ]
    assert (jobs_root / job_id / f"hf-{job_id}" / "README.md").is_file()
