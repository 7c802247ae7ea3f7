"""Two raylets on this machine (`ray start --head` and `ray start --address=…`), as a cluster of
two nodes would be: an agent run joins it with `--set backend.address=…`, its driver is killed
mid-run, and the same command again resumes from the run store, each task kept once."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from bashgym_procs import free_port

from bashgym.events import read_events

pytestmark = pytest.mark.slow  # two raylets start in 20-60 s on a busy 2-core machine

RAY = Path(sys.executable).with_name("ray")
BASHGYM = Path(sys.executable).with_name("bashgym")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a `ray start --block` and the Ray processes it started (its own session). The
    worker raylet ends on SIGTERM within a second; the head "drains for up to 30 s" and did
    not end in 20 (measured, every run): it gets SIGKILL after 5 s, not 20."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5 if sig == signal.SIGTERM else 20)
            return
        except subprocess.TimeoutExpired:
            continue


def _started(proc: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    """Wait until `ray start` says the runtime started (its log, polled cheaply), before the
    costlier check that asks the cluster (a Python process importing Ray)."""
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if time.monotonic() > deadline or proc.poll() is not None:
            pytest.fail(f"`ray start` did not start: {log.read_text(errors='replace')}")
        time.sleep(0.2)


NODES = """
import json, ray
ray.init(address=ADDRESS, logging_level="ERROR", log_to_driver=False)
print(json.dumps(sum(1 for n in ray.nodes() if n["Alive"])))
"""


def _nodes(address: str, env: dict[str, str]) -> int:
    """Alive nodes, as a driver sees them (0 while the head does not answer yet)."""
    code = NODES.replace("ADDRESS", repr(address))
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        )
        return int(json.loads(done.stdout.strip().splitlines()[-1]))
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return 0


@pytest.fixture(scope="module")
def two_nodes(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[str, dict[str, str]]]:
    """A head and a worker raylet, one CPU each; the env every process of the cluster shares:
    token auth with its token file (a client without it is refused), Ray's uv hook off, and
    the scripted models' key (a node's env)."""
    if not RAY.is_file():
        pytest.skip(f"the `ray` command is not installed beside {sys.executable}")
    root = tmp_path_factory.mktemp("cluster")
    # Ray's socket paths must stay under AF_UNIX's 107 bytes: a pytest tmp dir is too deep
    short = Path(tempfile.mkdtemp(prefix="bgr-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    token = root / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = {
        **os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "BASHGYM_SCRIPTED_KEY": "scripted-key",
        "TMPDIR": str(short),  # the worker raylet's and the drivers' Ray files too
    }  # fmt: skip
    from ray.util import get_node_ip_address  # the address the raylets bind to

    port = free_port()
    address = f"{get_node_ip_address()}:{port}"
    common = ["--num-cpus=1", "--block", "--disable-usage-stats"]
    logs = (root / "head.log").open("wb"), (root / "worker.log").open("wb")
    head = subprocess.Popen(
        [str(RAY), "start", "--head", f"--port={port}", "--include-dashboard=false",
         f"--temp-dir={short}", *common],
        env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    started = [head]
    try:
        deadline = time.monotonic() + 180
        _started(head, root / "head.log", deadline)
        while _nodes(address, env) < 1:
            if time.monotonic() > deadline or head.poll() is not None:
                pytest.fail(f"the head raylet did not start: {(root / 'head.log').read_text()}")
            time.sleep(2)
        worker = subprocess.Popen(
            [str(RAY), "start", f"--address={address}", *common],
            env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        started.append(worker)
        _started(worker, root / "worker.log", deadline)
        while _nodes(address, env) < 2:
            if time.monotonic() > deadline or worker.poll() is not None:
                pytest.fail(f"the worker raylet did not join: {(root / 'worker.log').read_text()}")
            time.sleep(2)
        yield address, env
    finally:
        for proc in reversed(started):
            _stop(proc)
        for log in logs:
            log.close()


def test_an_agent_run_on_two_raylets_survives_its_driver_killed(
    two_nodes, bashgym_cli, bashgym_env, plugin, tmp_path
):
    address, env = two_nodes
    env = {**env, **bashgym_env.env()}
    prompts = [f"slow task {i}" for i in range(6)]
    (tmp_path / "tasks.txt").write_text("\n".join(prompts) + "\n")
    (tmp_path / "starts").mkdir()  # the agent counts each task's starts there
    run, tasks = tmp_path / "run", tmp_path / "tasks.txt"
    args = [
        "run", "--plugin", str(plugin), "-s", "prompts", "--set", f"source.path={tasks}",
        "-x", "agent", "-e", "local", "-k", "parquet", "-c", "2", "--out", str(run),
        "--backend", "ray", "--set", f"backend.address={address}",
    ]  # fmt: skip
    driver = subprocess.Popen(
        [str(BASHGYM), *args], env=env, cwd=bashgym_env.workdir, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any(e.type == "task_finished" for e in read_events(run / "events.jsonl")):
            assert driver.poll() is None, "the driver ended before its first task finished"
            assert time.monotonic() < deadline, "no task finished in 120 s"
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    kept_first = {e.task_id for e in read_events(run / "events.jsonl") if e.type == "task_finished"}
    assert 1 <= len(kept_first) < len(prompts)
    with sqlite3.connect(run / "state.db") as db:  # the store commits a result before its event
        done = {k for (k,) in db.execute("SELECT key FROM items WHERE state = 'done'")}
    assert kept_first <= done  # (a task killed between the two is done, with no event)

    again = bashgym_cli.subprocess(*args, env=env, timeout=300)
    assert again.exit_code == 0, again.output
    rows = pd.read_parquet(run / "data.parquet")
    assert sorted(rows["prompt"]) == sorted(prompts)  # nothing lost, nothing twice
    assert set(rows["status"]) == {"success"}
    starts = {p.name: int(p.read_text()) for p in (tmp_path / "starts").iterdir()}
    assert all(starts[t] == 1 for t in kept_first)  # a kept task never ran again
    summary = json.loads((run / "run.json").read_text())
    # both attempts' ended tasks, each once: the first's events and the second's runs (a task
    # done in the store with no event ran in neither's events)
    ended = len(kept_first) + len(prompts) - len(done)
    assert summary["attempt"] == 2 and summary["tasks"]["success"] == ended
    assert summary["backend"]["nodes"] == 2 and summary["backend"]["where"] == address
