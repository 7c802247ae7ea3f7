"""Fixtures for the claude-code source tests: a RunContext and a reader that collects traces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

from bashgym.contracts import RunContext
from bashgym.records import Trace
from bashgym.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def run(tmp_path: Path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


@pytest.fixture
def read(run: RunContext) -> Callable[..., list[Trace]]:
    """`read(path=..., **options)`: every Trace the source yields."""

    def read(**options: Any) -> list[Trace]:
        return list(ClaudeCodeSource().open(ClaudeCodeOptions(**options), run))

    return read
