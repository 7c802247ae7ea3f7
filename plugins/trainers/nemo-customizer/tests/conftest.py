"""A scripted NeMo on 127.0.0.1: the Data Store's HF Hub API (create repo, preupload, commit),
the Entity Store's datasets and Customizer's jobs, with the statuses a test scripts."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class ScriptedNemo:
    """What the server holds and what it will answer; `statuses` are served one per poll."""

    token: str | None = None  # when set, requests without this bearer token get 401
    statuses: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # repo/path -> content
    datasets: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    polls: int = 0
    url: str = ""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        nemo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if nemo.token and self.headers.get("authorization") != f"Bearer {nemo.token}":
                    self._send(401, {"detail": "Unauthorized"})
                    return False
                return True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if not self._authorized():
                    return
                path = self.path
                if path == "/v1/hf/api/repos/create":
                    req = json.loads(body)
                    repo = f"{req['organization']}/{req['name']}"
                    self._send(200, {"url": f"{nemo.url}/v1/hf/datasets/{repo}", "name": repo})
                elif "/preupload/" in path:
                    files = json.loads(body)["files"]
                    modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                             for f in files]  # fmt: skip
                    self._send(200, {"files": modes})
                elif "/commit/" in path:
                    repo = path.split("/api/datasets/")[1].split("/commit/")[0]
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            content = base64.b64decode(item["value"]["content"]).decode()
                            nemo.files[f"{repo}/{item['value']['path']}"] = content
                    oid = "0" * 40
                    self._send(200, {"commitUrl": f"{nemo.url}/v1/hf/datasets/{repo}/commit/{oid}",
                                     "commitOid": oid})  # fmt: skip
                elif path == "/v1/datasets":
                    nemo.datasets.append(json.loads(body))
                    self._send(200, {"id": "dataset-1", **json.loads(body)})
                elif path == "/v1/customization/jobs":
                    job = json.loads(body)
                    nemo.jobs.append(job)
                    self._send(200, {"id": f"cust-{len(nemo.jobs)}", "status": "created",
                                     "output_model": "bashgym/student@cust-1"})  # fmt: skip
                else:
                    self._send(404, {"detail": f"no route {path}"})

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                if self.path.startswith("/v1/customization/jobs/") and self.path.endswith(
                    "/status"
                ):
                    status = nemo.statuses[min(nemo.polls, len(nemo.statuses) - 1)]
                    nemo.polls += 1
                    self._send(200, status)
                else:
                    self._send(404, {"detail": f"no route {self.path}"})

        return Handler


@pytest.fixture
def nemo() -> Iterator[ScriptedNemo]:
    state = ScriptedNemo()
    server = ThreadingHTTPServer(("127.0.0.1", 0), state.handler())
    state.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run as `--sink nemo-jsonl` leaves it."""
    run = tmp_path / "run"
    (run / "nemo-jsonl").mkdir(parents=True)
    line = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}
    (run / "nemo-jsonl" / "train.jsonl").write_text(json.dumps(line) + "\n")
    (run / "nemo-jsonl" / "val.jsonl").write_text(json.dumps(line) + "\n")
    paths = [str(run / "nemo-jsonl" / n) for n in ("train.jsonl", "val.jsonl")]
    (run / "run.json").write_text(json.dumps({"outputs": {"nemo-jsonl": paths}}))
    return run
