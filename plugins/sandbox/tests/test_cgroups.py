"""The session cgroup: a cage left by a BashGym that died is removed when the next is made."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bashgym_sandbox.cgroups import PREFIX, hierarchies, make_cage


def test_a_cage_left_by_a_dead_bashgym_is_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    hs = hierarchies()
    if "pids" not in hs:
        pytest.skip("needs a pids cgroup hierarchy")
    stale = hs["pids"].own / f"{PREFIX}{dead.pid}-leftover"
    try:
        stale.mkdir()
    except OSError as exc:
        pytest.skip(f"needs a writable pids cgroup: {exc}")
    cage, _ = make_cage(processes=16, memory_mb=None)
    try:
        assert not stale.exists()
    finally:
        if cage is not None:
            cage.remove()
        if stale.exists():
            stale.rmdir()
