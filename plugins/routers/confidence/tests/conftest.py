"""Fixtures of the confidence router's tests; helpers in `confidence_runs`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:  # pytest's importlib mode: `confidence_runs` beside this file
    sys.path.insert(0, HERE)

from confidence_runs import Attempt, write_run  # noqa: E402


@pytest.fixture
def run_of(tmp_path: Path) -> Callable[..., Path]:
    """`run_of(name, attempts)`: a run dir under tmp_path holding `attempts`."""

    def make(name: str, attempts: Iterable[Attempt], **kw: Any) -> Path:
        return write_run(tmp_path / name, attempts, **kw)

    return make
