"""Fixtures for every test in this repository (kernel and plugins). The `bashgym_testing`
fixtures load through its pytest11 entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent


@pytest.fixture
def repo() -> Path:
    """The repository root (examples/, bench/, ...)."""
    return REPO
