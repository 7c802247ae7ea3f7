"""bench/loop.py's task family is sound: every task's check fails on the workspace it starts
from and passes once the teacher's tool calls are applied, so "verified" in the loop's figures
means the work was done. (The loop itself needs the embedded model and torch for most of an
hour: it is run by hand; see README "The loop, measured".)"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from bashgym_executors_student import tools
from bashgym_sandbox import Workspace

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def loop():
    spec = importlib.util.spec_from_file_location("bench_loop", ROOT / "bench" / "loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(command: str, cwd: Path) -> int:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True).returncode


def apply(calls: list[tuple[str, dict]], ws: Path) -> None:
    """The teacher's calls, carried out by the student executor's own tools in `ws` (an edit
    whose old text is not there exactly once comes back as an error)."""
    env = SimpleNamespace(workspace=Workspace(ws))  # file tools use only the workspace
    for name, args in calls:
        result, failed = asyncio.run(tools.call(name, json.dumps(args), env, command_timeout=10))
        assert not failed, f"{name} {args}: {result}"


def test_each_kind_is_in_every_split_alike(loop):
    tasks = loop.make_tasks(24, seed=0)
    kinds = Counter((t["split"], len(t["calls"]), bool(t["files"])) for t in tasks)
    # 4 kinds, 2 of each per split: three are one write (6), the bug is a read and an edit (2)
    assert kinds == {
        (split, *kind): count
        for split in ("train", "calibration", "held-out")
        for kind, count in (((1, False), 6), ((2, True), 2))
    }
    assert len({t["prompt"] for t in tasks}) == 24
    assert loop.make_tasks(24, seed=0) == tasks  # deterministic from the seed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_check_fails_before_and_passes_after_the_teachers_calls(loop, seed, tmp_path):
    tasks = loop.make_tasks(24, seed=seed)
    template = loop.write_template(tasks, tmp_path / "template")
    for task in tasks:
        ws = tmp_path / task["id"]
        shutil.copytree(template, ws)
        assert check(task["check"], ws) != 0, f"{task['id']} passes untouched: {task['prompt']}"
        apply(task["calls"], ws)
        assert check(task["check"], ws) == 0, f"{task['id']} fails after the fix"


def test_a_bug_fixed_by_editing_its_test_does_not_pass(loop, tmp_path):
    """The check asserts what the test asserts, so rewriting the test is no way out."""
    bug = next(t for t in loop.make_tasks(24, seed=0) if t["files"])
    ws = loop.write_template([bug], tmp_path / "ws")
    test = next(name for name in bug["files"] if name.startswith("test_"))
    (ws / test).write_text("print('ok')\n")
    assert subprocess.run(["python3", test], cwd=ws).returncode == 0
    assert check(bug["check"], ws) != 0
