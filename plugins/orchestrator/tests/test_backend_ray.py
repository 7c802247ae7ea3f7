"""`orchestrate run --backend ray`: each task's worker runs on a Ray task slot (a local instance
of 2 CPUs the backend starts and stops), the student executor against the scripted OpenAI
server; worktrees, commits, checks and merges stay in the job's process. The same folders on
both sides: one machine is a shared filesystem."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.remote import backend_of
from bashgym_testing import Reply, ToolUse

from bashgym.plugins import current_host

TASK = re.compile(r"Task ([A-Za-z0-9._-]+): ")


def by_task(commands: dict[str, str]) -> Any:
    """A rule: a run_command call doing the task the prompt names, then its summary."""

    def answer(request: Any) -> Reply:
        texts = [m["content"] for m in request.messages if isinstance(m.get("content"), str)]
        found = next((m for t in texts if (m := TASK.search(t))), None)
        if found is None or found.group(1) not in commands:
            return Reply("ok")
        tid = found.group(1)
        if not any(m.get("role") == "tool" for m in request.messages):
            command = commands[tid]
            return Reply(f"Doing {tid}.", tool_calls=[ToolUse("run_command", {"command": command})])
        return Reply(f"Task {tid} is done.")

    return answer


@pytest.mark.slow
def test_workers_run_on_ray_and_the_job_merges_here(
    bashgym_cli: Any, no_scrub: None, scripted_models: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (bashgym-backends-ray[ray])")
    commands = {
        "one": "echo 1 > one.txt",
        "two": "echo 2 > two.txt",
        "three": "cat one.txt one.txt > three.txt",
    }
    scripted_models.server.add_rule(lambda r: True, by_task(commands))
    tasks = [
        orch.plan_task("one", "Make one.txt."),
        orch.plan_task("two", "Make two.txt."),
        orch.plan_task("three", "Make three.txt.", deps=["one"], check="test -s three.txt"),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -s one.txt")

    done = bashgym_cli(
        "orchestrate", "run", job.dir, "-x", "student", "-e", "local", "-k", "nemo-jsonl",
        "--backend", "ray", "--set", "backend.num_cpus=2",
    )  # fmt: skip

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 3}, result  # three's check ran
    assert orch.git(repo, "show", "bashgym/job/integration:three.txt") == "1\n1"
    assert orch.finished_counts(job) == dict.fromkeys(commands, 1)
    assert {tid: t["attempts"] for tid, t in result["tasks"].items()} == dict.fromkeys(commands, 1)
    assert result["verify"]["ok"] is True
    rows = [
        json.loads(line)
        for name in ("train.jsonl", "val.jsonl")
        for line in (job.dir / "nemo-jsonl" / name).read_text().splitlines()
    ]
    assert len(rows) == 4  # a trace per task, and the plan
    calls = [c for r in rows for m in r["messages"] for c in m.get("tool_calls", [])]
    assert sum(c["function"]["name"] == "run_command" for c in calls) == 3
    ran = json.loads((job.dir / "run.json").read_text())["backend"]
    # a local instance of its own, or the one the Ray plugin's tests started in this worker
    assert ran["name"] == "ray" and ran["where"] in ("local instance", "this process's Ray"), ran
    assert ran["tasks"] == 3 and ran["task_worker_s"] > 0, ran  # each worker: one call
    # `orchestrate resume` and `retry` rerun run.toml: the backend is in it
    run_toml = tomllib.loads((job.dir / "run.toml").read_text())
    assert run_toml["backend"]["plugin"] == "ray"
    assert run_toml["backend"]["num_cpus"] == 2
    step = backend_of(job.dir, current_host().registry)  # what a resumed job's source gets
    assert step is not None and step.name == "ray" and step.options.num_cpus == 2


@pytest.mark.slow  # seconds when idle, 15 s measured on a loaded 2-core machine
def test_the_configured_backend_is_the_default_and_an_unknown_one_is_one_line(
    bashgym_cli: Any, no_scrub: None, repo: Path, tmp_path: Path, orch: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("BASHGYM_ORCHESTRATOR__BACKEND", "no-such-backend")
    job = orch.make_job(tmp_path / "job", repo, [orch.plan_task("one", "Make one.txt.")])

    done = bashgym_cli("orchestrate", "run", job.dir, "-x", "student", "-e", "local")

    assert done.exit_code == 2, done.output
    assert "no-such-backend" in done.output
    assert not (job.dir / "run.toml").exists()  # refused before anything ran
