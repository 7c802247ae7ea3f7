"""Fixtures: the student loop against the scripted OpenAI server, in a temp workspace."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from bashgym_sandbox import Workspace
from bashgym_testing import PlainSession, models_for
from bashgym_work_tasks import run_task

from bashgym.contracts import Budget, EnvironmentSession, RunContext, TaskContext
from bashgym.events import Event, EventBus
from bashgym.records import Task
from bashgym.settings import ModelAlias, Settings

KEY_ENV = "BASHGYM_TEST_OPENAI_KEY"


class Harness:
    def __init__(self, root: Path, server: Any) -> None:
        self.root, self.server = root, server
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.events: list[Event] = []

    def settings(self, **alias: Any) -> Settings:
        fields = {
            "provider": "openai-compatible",
            "model": "scripted-student",
            "endpoint": self.server.openai_base_url,
            "api_key_env": KEY_ENV,
            "params": {"max_retries": 0},
            **alias,
        }
        return Settings(models={"student": ModelAlias(**fields)})

    def context(
        self, *, timeout: float | None = None, session: EnvironmentSession | None = None,
        budget: float | None = None, **alias: Any,
    ) -> TaskContext:  # fmt: skip
        settings = self.settings(**alias)
        bus = EventBus()
        bus.subscribe(self.events.append)
        run = RunContext(self.root / "run", settings, models=models_for(settings), bus=bus)
        return TaskContext(
            run=run,
            env=session or PlainSession(Workspace(self.workspace)),
            budget=Budget(budget),
            deadline=time.monotonic() + timeout if timeout else None,
            task_id="t1",
        )

    def run(self, task: Task, *, options: Any = None, **context: Any) -> Any:
        from bashgym_executors_student import Student, StudentOptions

        ctx = self.context(**context)
        try:
            return asyncio.run(
                run_task(Student(), "student", task, options or StudentOptions(), ctx)
            )
        finally:
            ctx.models.close()


@pytest.fixture
def harness(tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv(KEY_ENV, "sk-student-test")
    return Harness(tmp_path, model_server)
