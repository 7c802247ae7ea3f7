"""The API against a real uvicorn, a real HTTP client (httpx) and a real WebSocket client
(websockets): jobs are real `bashgym run` children, the LLM one answered by the scripted
model server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from bashgym_api.orchestration import dag_problems, dag_svg
from bashgym_api.tail import parse_lines
from bashgym_procs import free_port
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

# A DataDesigner config file: a sampled topic, then one LLM call per row (alias `default`, the
# scripted server), one request at a time, so a 20-row run lasts long enough to cancel.
LLM_CONFIG = """\
data_designer:
  columns:
  - column_type: sampler
    name: topic
    sampler_type: category
    params: {sampler_type: category, values: [git, tests, docs]}
  - column_type: llm-text
    name: answer
    model_alias: default
    prompt: 'Say one thing about {{ topic }}.'
  model_configs:
  - alias: default
    model: scripted-default
    provider: default
    inference_parameters: {max_parallel_requests: 1}
    skip_health_check: true
"""


def file_events(job_dir: Path) -> list[dict]:
    lines, _ = parse_lines((job_dir / "events.jsonl").read_bytes(), 0)
    return [json.loads(text) for _, text in lines]


def strip(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "_offset"} for e in events]


@pytest.mark.slow
def test_jobs_stream_cancel_resume_and_survive_a_restart(
    api, scripted_models, jobs_root, tmp_path, monkeypatch
):
    monkeypatch.delenv("HF_TOKEN", raising=False)  # the push below must fail, offline
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    server = scripted_models.server
    server.latency = 0.5
    served = api()

    # a small run: its events streamed to the end over the WebSocket, then its rows
    created = served.client.post(
        "/api/jobs", json={"pipeline": "samplers", "num_records": 5, "sinks": ["parquet"]}
    )
    assert created.status_code == 201, created.text
    quick = created.json()["id"]

    # a slow LLM run, cancelled mid-run once its first rows are in
    config = tmp_path / "llm.yaml"
    config.write_text(LLM_CONFIG)
    spec = {
        "pipeline": {"plugin": "datadesigner-config", "path": str(config)},
        "num_records": 12,
        "sinks": [{"plugin": "parquet"}],
        "designer": {"buffer_size": 3},
    }
    created = served.client.post("/api/jobs", json=spec)
    assert created.status_code == 201, created.text
    slow = created.json()["id"]

    # cancelled as soon as its first rows are in (on a quiet machine the whole run takes
    # seconds: what the other checks below cost would let it finish first)
    def first_rows(event: dict) -> bool:
        return event["type"] == "rows_generated" and event["step"] == "pipeline" and event["n"]

    seen, _ = served.events(slow, until=first_rows)
    cancelled = served.client.delete(f"/api/jobs/{slow}")
    assert cancelled.status_code == 200, cancelled.text

    events, end = served.events(quick)
    assert end is not None and end["status"] == "ok"
    assert strip(events) == file_events(jobs_root / quick)  # every event, in order, once
    types = [e["type"] for e in events]
    assert types[0] == "run_started" and "run_finished" in types
    job = served.client.get(f"/api/jobs/{quick}").json()
    assert job["status"] == "ok" and job["kept"] == 5 and job["requested"] == 5
    log = served.client.get(f"/api/jobs/{quick}/log").json()["log"]
    assert job["report_url"], (job["notes"], log)  # the report plugin's on_run_end wrote it
    assert served.client.get(job["report_url"]).status_code == 200
    rows = served.client.get(f"/api/jobs/{quick}/rows", params={"limit": 2, "offset": 3}).json()
    assert rows["total"] == 5 and len(rows["rows"]) == 2
    assert set(rows["rows"][0]) == {"task_category", "difficulty"}

    # a push to the Hub runs `bashgym push` as a child: offline, it fails with its one line in
    # the push's log, and the job is untouched (no token set: said at once, no child started)
    pushed = served.client.post(f"/api/jobs/{quick}/push", json={"repo": "me/agent-sft"})
    assert pushed.status_code == 422 and "$HF_TOKEN is not set" in pushed.text, pushed.text
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    pushed = served.client.post(f"/api/jobs/{quick}/push", json={"repo": "me/agent-sft"})
    assert pushed.status_code == 202, pushed.text
    assert served.client.post(f"/api/jobs/{quick}/push", json={"repo": "-x"}).status_code == 422
    deadline = time.monotonic() + 120
    while (push := served.client.get(f"/api/jobs/{quick}/push").json())["exit_code"] is None:
        assert time.monotonic() < deadline, push
        time.sleep(0.3)
    assert push["exit_code"] == 2 and "parquet" in push["log"], push  # a parquet-only run

    # a reconnect from the middle gets exactly the rest
    middle = events[len(events) // 2 - 1]["_offset"]
    rest, end = served.events(quick, offset=middle)
    assert strip(rest) == strip([e for e in events if e["_offset"] > middle])

    job = served.wait_status(slow, {"cancelled", "failed", "ok"}, timeout=60)
    assert job["status"] == "cancelled", job
    run = json.loads((jobs_root / slow / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert served.client.delete(f"/api/jobs/{slow}").status_code == 409  # not running now

    # a new server over the same jobs root finds both jobs, from their directories alone
    served.stop()
    served = api()
    listed = {j["id"]: j for j in served.client.get("/api/jobs").json()}
    assert listed[quick]["status"] == "ok" and listed[quick]["kept"] == 5
    assert listed[slow]["status"] == "cancelled"

    before = len(server.completions)
    resumed = served.client.post(f"/api/jobs/{slow}/resume")
    assert resumed.status_code == 200, resumed.text
    offset = seen[-1]["_offset"]
    more, end = served.events(slow, offset=offset)  # carry on from where the client was
    assert end is not None and end["status"] == "ok", end
    assert [e["type"] for e in more].count("run_started") == 1
    after = [e for e in file_events(jobs_root / slow) if e not in strip(seen)]
    assert strip(more) == after  # the cancelled attempt's last events, then the resumed one's
    job = served.client.get(f"/api/jobs/{slow}").json()
    assert job["status"] == "ok" and job["kept"] == 12 and job["attempt"] == 2
    rows = served.client.get(f"/api/jobs/{slow}/rows", params={"limit": 100}).json()
    assert rows["total"] == 12 and all(r["answer"] for r in rows["rows"])
    # the resumed attempt asked only for what the first had not finished
    assert len(server.completions) - before < 12


def test_bad_requests_are_4xx_with_one_message(api, jobs_root):
    served = api()
    client = served.client
    r = client.post("/api/jobs", json={"pipeline": "no-such", "sinks": ["parquet"]})
    assert r.status_code == 422 and "unknown pipeline 'no-such'" in r.json()["detail"]
    assert "samplers" in r.json()["detail"]  # the valid names are listed
    r = client.post("/api/jobs", json={"pipeline": {"plugin": "samplers", "categories": 3},
                                       "sinks": ["parquet"]})  # fmt: skip
    assert r.status_code == 422 and "categories" in r.json()["detail"]
    r = client.post("/api/jobs", json={"pipeline": "samplers"})
    assert r.status_code == 422 and "sink" in r.json()["detail"]
    r = client.post("/api/jobs", json={"pipeline": "samplers", "sinks": ["parquet"], "out": "/"})
    assert r.status_code == 422 and "out" in r.json()["detail"]
    r = client.post("/api/jobs", json={"pipeline": "samplers", "sinks": ["parquet"],
                                       "plugins": ["/tmp/evil.py"]})  # fmt: skip
    assert r.status_code == 403 and "allow_plugin_files" in r.json()["detail"]
    r = client.post("/api/jobs", content=b"[1, 2", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]
    r = client.post("/api/pipelines/no-such/preview", json={})
    assert r.status_code == 404 and "no-such" in r.json()["detail"]
    r = client.post("/api/pipelines/samplers/preview", json={"options": {"weights": 1}})
    assert r.status_code == 422 and "weights" in r.json()["detail"]
    r = client.post("/api/validate", json={"pipeline": "samplers", "options": {"nope": 1}})
    assert r.status_code == 422 and "nope" in r.json()["detail"]
    for path in ("/api/jobs/nope", "/api/jobs/..%2f..%2fetc/rows", "/jobs/nope"):
        r = client.get(path)
        assert r.status_code == 404, (path, r.text)
    assert client.delete("/api/jobs/nope").status_code == 404
    assert client.get("/api/jobs").json() == []  # nothing was started by a bad request
    assert not any(jobs_root.iterdir())
    # a plan whose tasks depend on each other in a circle is refused, naming the cycle
    cyclic = [{"id": "a", "depends_on": ["c"]}, {"id": "b", "depends_on": ["a"]},
              {"id": "c", "depends_on": ["b"]}]  # fmt: skip
    assert dag_problems(cyclic) == ["the tasks' dependencies form a cycle: a -> c -> b -> a"]
    assert "cycle" in dag_svg(cyclic)
    assert dag_problems([{"id": "a", "depends_on": ["z"]}]) == [
        "task 'a' depends on 'z', which is no task"
    ]


@pytest.mark.slow  # DataDesigner's validation three times: ~10 s on two busy cores
def test_pipelines_validate_and_the_docs(api):
    served = api()
    pipelines = {p["name"]: p for p in served.client.get("/api/pipelines").json()}
    samplers = pipelines["samplers"]
    assert "categories" in samplers["options_schema"]["properties"]
    assert samplers["runs_with_defaults"] and not samplers["needs_seed"]
    ok = served.client.post("/api/validate", json={"pipeline": "samplers"}).json()
    assert ok["valid"] and {c["name"] for c in ok["columns"]} >= {"difficulty"}
    bad = served.client.post(
        "/api/validate",
        json={"pipeline": "samplers", "options": {"expressions": {"p": "{{ missing }}"}}},
    ).json()
    assert not bad["valid"] and "missing" in bad["problems"][0]
    config = LLM_CONFIG.split("  - column_type: llm-text")[0]  # the sampler column alone
    from_file = served.client.post("/api/validate", json={"config": config, "format": "yaml"})
    assert from_file.status_code == 200 and from_file.json()["valid"], from_file.text
    assert served.client.get("/openapi.json").json()["paths"]["/api/jobs"]
    assert served.client.get("/docs").status_code == 200


@pytest.mark.slow
def test_preview_streams_json_lines(api):
    served = api()
    lines = []
    with served.client.stream(
        "POST", "/api/pipelines/samplers/preview", json={"num_records": 3}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        for line in response.iter_lines():
            if line.strip():
                lines.append(json.loads(line))
    kinds = [m["message_type"] for m in lines]
    assert kinds.count("record") == 3 and kinds[-1] == "summary", lines
    assert lines[-1]["message"]["requested"] == 3
    assert {"task_category", "difficulty"} <= set(lines[kinds.index("record")]["message"])


@pytest.mark.slow
def test_a_bind_off_loopback_needs_the_token(bashgym_env, tmp_path):
    """The real `bashgym api serve --host 0.0.0.0`: it prints a token, and refuses (401) every
    HTTP request and WebSocket handshake without it."""
    port = free_port()
    exe = str(Path(sys.executable).with_name("bashgym"))
    proc = subprocess.Popen(
        [exe, "api", "serve", "--host", "0.0.0.0", "--port", str(port),
         "--jobs-dir", str(tmp_path / "jobs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        token_line = proc.stderr.readline()  # printed before the server starts
        match = re.search(r"Bearer TOKEN'\): (\S+)", token_line)
        assert match, token_line
        token = match.group(1)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                r = httpx.get(f"{url}/api/health", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.2)
        assert r.status_code == 401 and "token" in r.json()["detail"]
        for path in ("/", "/docs", "/api/jobs", "/static/app.js"):
            assert httpx.get(url + path).status_code == 401, path
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.get(f"{url}/api/jobs", headers=wrong).status_code == 401
        good = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{url}/api/jobs", headers=good).json() == []
        with pytest.raises(InvalidStatus) as refused:
            connect(f"ws://127.0.0.1:{port}/ws/jobs/x", open_timeout=10)
        assert refused.value.response.status_code == 401
        page = httpx.get(f"{url}/?token={token}")  # a browser's first visit sets the cookie
        assert page.status_code == 200 and "bashgym_token" in page.headers["set-cookie"]
        assert "HttpOnly" in page.headers["set-cookie"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)


def test_cors_is_off_unless_configured_and_preflight_needs_no_token(api):
    plain = api()
    asked = {"Origin": "http://ui.example", "Access-Control-Request-Method": "POST"}
    r = plain.client.options("/api/jobs", headers=asked)
    assert "access-control-allow-origin" not in r.headers
    served = api(token="s3cret", cors_origins=["http://ui.example"])
    r = httpx.options(f"{served.url}/api/jobs", headers=asked)
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "http://ui.example"
    assert httpx.get(f"{served.url}/api/jobs").status_code == 401
    assert served.client.get("/api/jobs").status_code == 200  # its client sends the token
