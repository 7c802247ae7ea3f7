"""A real uvicorn on 127.0.0.1 (a free port, in a thread) serving the API over a jobs root in
the test's tmp dir; the jobs it starts are real `bashgym run` child processes, which inherit
the test's working directory and environment (so `scripted_models` points them at the
scripted model server)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from bashgym_api import ServerConfig, create_app
from bashgym_procs import free_port
from bashgym_testing import Reply, ToolUse
from websockets.sync.client import connect


@dataclass
class Served:
    """One running server: its base URL, an httpx client, and how to stop it."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread
    client: httpx.Client

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def events(self, job_id: str, offset: int = 0, until: Callable[[dict], bool] | None = None):
        """Messages of the job's WebSocket from `offset`: until the end message, or until
        `until(event)` holds for an event (then the socket is closed)."""
        got: list[dict[str, Any]] = []
        last = offset
        with connect(f"{self.ws_url}/ws/jobs/{job_id}?offset={offset}", open_timeout=30) as ws:
            for raw in ws:
                msg = json.loads(raw)
                if msg.get("end"):
                    return got, msg
                assert msg["offset"] > last  # offsets only grow: nothing sent twice
                last = msg["offset"]
                got += [{**event, "_offset": msg["offset"]} for event in msg["events"]]
                if until is not None and any(until(event) for event in msg["events"]):
                    return got, None  # whole messages: the next connect starts after this one
        raise AssertionError("the WebSocket closed without an end message")

    def wait_status(self, job_id: str, wanted: set[str], timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.client.get(f"/api/jobs/{job_id}").json()
            if job["status"] in wanted:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} still {job['status']}: {job}")
            time.sleep(0.3)


def start_server(config: ServerConfig, host: str = "127.0.0.1") -> Served:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config), host=host, port=port, log_level="warning", ws="websockets-sansio"
        )
    )
    thread = threading.Thread(target=server.run, name="api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    return Served(url, server, thread, httpx.Client(base_url=url, timeout=60, headers=headers))


@pytest.fixture
def jobs_root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def api(bashgym_env: Any, jobs_root: Path) -> Iterator[Callable[..., Served]]:
    """`api(**config)` starts a server over `jobs_root`; every one started is stopped after,
    and every job still running is stopped too (no child outlives the test)."""
    started: list[Served] = []

    def start(**config: Any) -> Served:
        served = start_server(ServerConfig(jobs_root=jobs_root, cancel_grace_s=5, **config))
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
    from bashgym_api.jobs import Jobs

    jobs = Jobs(jobs_root)
    for job_id in jobs.ids():
        if jobs.running(jobs.dir(job_id)):
            jobs.cancel(job_id)


def plan_task(tid: str, *deps: str) -> dict[str, Any]:
    return {
        "id": tid, "title": f"do {tid}", "description": f"the {tid} part", "priority": "normal",
        "depends_on": list(deps), "files": [f"src/{tid}.py"], "estimated_turns": 2,
        "budget_usd": 0.5, "prompt": f"Write src/{tid}.py.",
    }  # fmt: skip


PLAN = {"tasks": [plan_task("core"), plan_task("cli", "core"), plan_task("docs", "core")]}
SPEC = """+++
repository = "{repo}"
workers = 2
+++
# Add a greeting command

The CLI greets the user by name.

## Acceptance criteria
- `tool greet Ada` prints `Hello, Ada!`
"""


def worker_turn(request: Any) -> Reply:
    """A student worker's turns: write the file its task names, then say it is done."""
    if any(m.get("role") == "tool" for m in request.messages):
        return Reply("Done: the file is written.")
    name = re.search(r"Write src/(\w+)\.py", " ".join(map(str, request.messages)))
    path = f"src/{name.group(1) if name else 'other'}.py"
    return Reply(tool_calls=[ToolUse("write_file", {"path": path, "content": "print('hi')\n"})])


@pytest.fixture
def orchestration_spec(scripted_models: Any, tmp_path: Path) -> str:
    """A spec (Markdown) over a new git repository; the scripted server answers its planning
    with PLAN (core, then cli and docs), and the tasks run on the student executor, on the
    host, against the same server: each writes its task's file (`worker_turn`)."""
    with (scripted_models.env.workdir / "bashgym.toml").open("a") as fh:
        fh.write('[orchestrator]\nexecutor = "student"\nenvironment = "local"\n')
    scripted_models.server.script(Reply(json.dumps(PLAN)))  # the planner's answer
    scripted_models.server.add_rule(lambda request: True, worker_turn)  # then each worker's
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# greeter\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True, capture_output=True,
        )  # fmt: skip
    return SPEC.format(repo=repo)
