"""Scripted-server replies for testing the coding-agent pipelines row by row.

The scripted model server answers every DataDesigner prompt with a valid default, which cannot
tell rows apart. These helpers number the tasks it writes ("Task 3: ...") and let a test decide,
per task number, what the solver and the judge answer: a trajectory (with Python files, valid
or not), an unparseable reply, or given scores. Shipped with the package so the DPO pipeline's
tests (and third-party variants) steer the same way.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from bashgym_testing.server import RecordedRequest, Reply

TASK_RE = re.compile(r"Task (\d+):")
GOOD_MODULE = "def add(a: int, b: int) -> int:\n    return a + b\n"
GOOD_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BROKEN_MODULE = "def add(a, b:\n    return a +\n"


def is_task_request(request: RecordedRequest) -> bool:
    return request.last_user_text.lstrip().startswith("Write one task")


def is_solution_request(request: RecordedRequest) -> bool:
    return "Write the trajectory of an expert coding agent" in request.last_user_text


def is_judge_request(request: RecordedRequest) -> bool:
    return "<response>" in request.last_user_text and "<task>" in request.last_user_text


def task_number_of(text: str) -> int:
    """The number of the first "Task N:" in `text` (-1 when none)."""
    match = TASK_RE.search(text)
    return int(match.group(1)) if match else -1


def task_number(request: RecordedRequest) -> int:
    """The number of the task a solver or judge prompt is about (-1 when none)."""
    return task_number_of(request.last_user_text)


def numbered_tasks() -> Callable[[RecordedRequest], Reply]:
    """A task-writer reply giving each request the next task number (thread safe)."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def reply(_: RecordedRequest) -> Reply:
        with lock:
            n = next(counter)
        return Reply(f"Task {n}: make `add` in calc.py handle ints and add a test for it.")

    return reply


def trajectory(task: int, files: Mapping[str, str] | None = None, note: str = "") -> dict[str, Any]:
    """A small, coherent trajectory for task `task` that writes `files` (path -> content)."""
    files = {"calc.py": GOOD_MODULE, "tests/test_calc.py": GOOD_TEST} if files is None else files
    steps: list[dict[str, Any]] = [
        {
            "thought": f"Task {task}: see what calc.py holds before changing it.",
            "tool": "read_file",
            "path": "calc.py",
            "observation": "1  def add(a, b):\n2      return a - b",
        }
    ]
    steps += [
        {
            "thought": f"Write {path} in full.",
            "tool": "write_file",
            "path": path,
            "content": content,
            "observation": f"Wrote {path}.",
        }
        for path, content in files.items()
    ]
    steps += [  # shapes the render must survive: nulls, a deletion, a non-Python file
        {
            "thought": "Drop the stale note from the README.",
            "tool": "edit_file",
            "path": "README.md",
            "old_text": "add() is broken\n",
            "new_text": "",
            "observation": "Edited README.md.",
        },
        {
            "thought": "Check nothing else calls the old name.",
            "tool": "search_code",
            "path": ".",
            "pattern": "subtract\\(",
            "command": None,
            "observation": "(no matches)",
        },
    ]
    steps.append(
        {
            "thought": "Run the tests to verify.",
            "tool": "run_tests",
            "command": "pytest -q",
            "observation": "1 passed in 0.01s",
        }
    )
    return {
        "plan": ["Read calc.py", "Fix add and write a test", "Run the tests"],
        "steps": steps,
        "summary": f"Task {task}: fixed add in calc.py and added a test; pytest passes. {note}",
    }


def json_reply(value: Any) -> Reply:
    return Reply("```json\n" + json.dumps(value, indent=2) + "\n```")


def judge_verdict(scores: Mapping[str, int]) -> dict[str, Any]:
    return {name: {"reasoning": f"scored {s}", "score": s} for name, s in scores.items()}


def all_scores(value: int) -> dict[str, int]:
    return {"correctness": value, "tool_usage": value, "completeness": value}
