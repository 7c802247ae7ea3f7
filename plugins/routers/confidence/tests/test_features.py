"""Features: what the router knows of a task before running it, computed from the Task alone."""

from __future__ import annotations

import math

import pytest
from bashgym_routers_confidence.features import BASE_FEATURES, task_features, vector

from bashgym.records import Task

PROMPT = """Refactor the retry logic in src/net/client.py and fix the race in `Pool.get`.
The tests in tests/test_client.py must still pass; see also setup.cfg.

```python
def get(self):
    return self._items.pop()  # see other/ignored.py, inside the block
```
Do not touch `README`. Debug the deadlock too; then debug it again."""


def test_counts_code_paths_and_words_outside_code_blocks() -> None:
    f = task_features(Task(id="t", prompt=PROMPT))
    assert set(f) == set(BASE_FEATURES)
    assert f["code_blocks"] == 1
    assert f["log_code_lines"] == pytest.approx(math.log1p(2))
    assert f["inline_code"] == 2  # `Pool.get`, `README`
    # three paths in the text; the one inside the code block is code, not a reference
    assert f["file_refs"] == 3
    # refactor, race, debug, deadlock: distinct words, `debug` twice counts once
    assert f["hard_words"] == 4
    assert f["easy_words"] == 1  # `README`: words are crude signals, weighed by the fit
    assert f["log_prompt_chars"] == pytest.approx(math.log1p(len(PROMPT)))
    assert f["has_est_turns"] == 0 and f["log_est_turns"] == 0


def test_a_plan_gives_turns_and_files_and_dependencies() -> None:
    task = Task(
        id="t",
        prompt="Fix a typo in the docstring and rename a constant.",
        metadata={"estimated_turns": 7, "files": ["a.py", "b/c.py", " "]},
        depends_on=["t0", "t1"],
    )
    f = task_features(task)
    assert f["log_est_turns"] == pytest.approx(math.log1p(7))
    assert f["has_est_turns"] == 1
    assert f["file_refs"] == 2  # the blank entry is not a file
    assert f["easy_words"] == 4  # typo, docstring, rename, constant
    assert f["depends_on"] == 2
    nested = Task(id="t", prompt="x", metadata={"plan": {"estimated_turns": 3}})
    assert task_features(nested)["log_est_turns"] == pytest.approx(math.log1p(3))


@pytest.mark.parametrize("value", ["many", float("nan"), -2, None, True])
def test_an_estimate_that_is_not_a_count_is_unknown(value: object) -> None:
    f = task_features(Task(id="t", prompt="x", metadata={"estimated_turns": value}))
    assert (f["has_est_turns"], f["log_est_turns"]) == (0, 0)


def test_turns_taken_are_an_outcome_never_a_feature() -> None:
    """A row's `turns` (what the run took) must not leak into what the router sees before."""
    plain = task_features(Task(id="t", prompt="do it"))
    leaky = task_features(Task(id="t", prompt="do it", metadata={"turns": 40, "num_turns": 40}))
    assert plain == leaky


def test_vector_names_what_is_missing() -> None:
    f = task_features(Task(id="t", prompt="x"))
    assert vector(f, ["hard_words", "file_refs"]) == [0.0, 0.0]
    with pytest.raises(ValueError, match="probe"):
        vector(f, ["hard_words", "probe"])
