"""Fixtures: a real git repository, a job directory with a hand-made plan (the planner has its
own tests), and the `shell` test executor plugin, which runs each task's ```sh block."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.job import Job
from bashgym_orchestrator.plan import Plan, PlannedTask
from bashgym_orchestrator.spec import Spec

SHELL_PLUGIN = str(Path(__file__).with_name("shell_executor.py"))


class Helpers:
    """What the tests share (a fixture: --import-mode=importlib cannot import conftest)."""

    shell_plugin = SHELL_PLUGIN

    @staticmethod
    def git(repo: Path, *args: str) -> str:
        return git(repo, *args)

    @staticmethod
    def shell_task(tid: str, command: str, deps: tuple[str, ...] = (), **fields: Any) -> Any:
        return shell_task(tid, command, deps, **fields)

    @staticmethod
    def plan_task(tid: str, prompt: str, deps: list[str] | None = None, **fields: Any) -> Any:
        return PlannedTask(
            id=tid, title=f"task {tid}", prompt=prompt, depends_on=deps or [], **fields
        )

    @staticmethod
    def make_job(folder: Path, repo: Path, tasks: list[Any], **fields: Any) -> Job:
        return make_job(folder, repo, tasks, **fields)

    @staticmethod
    def events(job: Job) -> list[dict[str, Any]]:
        return events(job)

    @staticmethod
    def finished_counts(job: Job) -> Counter[str]:
        return finished_counts(job)


@pytest.fixture
def orch() -> type[Helpers]:
    return Helpers


@pytest.fixture
def no_scrub(bashgym_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secret scrubbing off for a test of orchestration alone: the secrets scrubber compiles
    its pattern database at every run's start (tens of seconds on a loaded 2-core machine);
    the full job test keeps it on and checks a secret never reaches a file."""
    monkeypatch.setenv("BASHGYM_SCRUB__ENABLED", "false")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on `main` with a README and a file two tasks will both append to;
    an uncommitted change in the user's tree, which the job must leave alone."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "README.md").write_text("# demo\n")
    (root / "shared.txt").write_text("first line\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    (root / "README.md").write_text("# demo\nwork in progress, not committed\n")
    return root


def shell_task(
    tid: str, command: str, deps: tuple[str, ...] = (), cost: float | None = None, **fields: Any
) -> PlannedTask:
    """A task the `shell` executor does by running `command`, charging `cost` USD."""
    charge = "" if cost is None else f"cost: {cost}\n"
    return PlannedTask(
        id=tid,
        title=f"task {tid}",
        depends_on=list(deps),
        prompt=f"do {tid}\n```sh\n{command}\n```\n{charge}",
        **fields,
    )


def make_job(
    folder: Path, repo: Path, tasks: list[PlannedTask], *, approved: bool = True, **spec: Any
) -> Job:
    folder.mkdir(parents=True, exist_ok=True)
    job = Job(folder.absolute())
    job.save_spec(Spec(title="demo job", repository=repo, **spec))
    job.save_plan(Plan(title="demo job", planner="hand", tasks=tasks, approved=approved))
    return job


def events(job: Job) -> list[dict[str, Any]]:
    log = job.dir / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def finished_counts(job: Job) -> Counter[str]:
    """How many times each task was said to have ended (task_finished events)."""
    return Counter(e["task_id"] for e in events(job) if e["type"] == "task_finished")
