"""Fixtures: the real `claude` binary against the scripted Anthropic server, in a git repo."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bashgym_sandbox import Workspace
from bashgym_testing import PlainSession, models_for

from bashgym.contracts import RunContext, TaskContext
from bashgym.events import Event, EventBus
from bashgym.settings import ModelAlias, Settings

KEY_ENV = "BASHGYM_TEST_ANTHROPIC_KEY"
KEY = "sk-test-scripted"


class Harness:
    """One task's context: a git repo workspace, settings with a `claude` alias, events."""

    def __init__(self, root: Path, server: Any) -> None:
        self.root, self.server = root, server
        self.workspace = root / "repo"
        self.workspace.mkdir()
        subprocess.run(["git", "init", "-q", str(self.workspace)], check=True)
        (self.workspace / "README.md").write_text("# demo\n")
        self.events: list[Event] = []
        self.config_dir = root / "claude-config"
        self.key = KEY

    def settings(self, **alias: Any) -> Settings:
        fields = {
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "endpoint": self.server.anthropic_base_url,
            "api_key_env": KEY_ENV,
            "params": {"max_retries": 0},
            **alias,
        }
        return Settings(models={"claude": ModelAlias(**fields)})

    def context(
        self, *, timeout: float | None = None, settings: Settings | None = None
    ) -> TaskContext:
        settings = settings or self.settings()
        bus = EventBus()
        bus.subscribe(self.events.append)
        run = RunContext(self.root / "run", settings, models=models_for(settings), bus=bus)
        return TaskContext(
            run=run,
            env=PlainSession(Workspace(self.workspace)),
            deadline=time.monotonic() + timeout if timeout else None,
            task_id="t1",
        )

    def options(self, executor: Any, **fields: Any) -> Any:
        return executor.Options(config_dir=str(self.config_dir), **fields)


@pytest.fixture
def harness(
    tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    monkeypatch.setenv(KEY_ENV, KEY)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield Harness(tmp_path, model_server)
