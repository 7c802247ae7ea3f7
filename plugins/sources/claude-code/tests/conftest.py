"""Fixtures for the claude-code source tests: a RunContext and a reader that collects traces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

from bashgym.contracts import RunContext
from bashgym.records import Trace, trace_from_row
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
    """`read(path=..., **options)`: the Trace of every row the source yields."""

    def read(**options: Any) -> list[Trace]:
        return [
            trace_from_row(r) for r in ClaudeCodeSource().open(ClaudeCodeOptions(**options), run)
        ]

    return read
