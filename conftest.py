"""Fixtures for every test in this repository (kernel and plugins). The `bashgym_testing`
fixtures load through its pytest11 entry point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent

# The suite starts hundreds of `bashgym` and plugin processes. Where PYTHONDONTWRITEBYTECODE is
# set (CI machines, this workplace) each compiled ~1,300 modules from source again (importing
# DataDesigner and litellm: 12.7 s of CPU instead of 3.9 s, measured); the first one now writes
# the bytecode the rest reuse. (uv's compile-bytecode setting would do it at install, but then
# every `uv run` re-checks 18,000 files: +2 s each, measured.)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture
def repo() -> Path:
    """The repository root (examples/, bench/, ...)."""
    return REPO
