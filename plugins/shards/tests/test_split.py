"""The shard split and merge, on plain frames: contiguous ranges within one row of each other,
each with the seed rows the whole round would use there (wrapping), merged back in order with
row counts added up."""

from __future__ import annotations

import pandas as pd
from bashgym_shards import merge, plan, seed_rows

from bashgym.contracts import Generated
from bashgym.records import DroppedRow


def test_plan_splits_rows_into_contiguous_ranges_within_one_of_each_other():
    assert plan(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert plan(2, 5) == [(0, 1), (1, 2)]  # never an empty shard
    assert plan(7, 1) == [(0, 7)]


def test_seed_rows_are_the_ones_the_whole_round_uses_there():
    seed = pd.DataFrame({"task": ["a", "b", "c"]})
    assert list(seed_rows(seed, 2, 6)["task"]) == ["c", "a", "b"]  # wraps, at most the seed once
    assert list(seed_rows(seed, 4, 5)["task"]) == ["b"]
    assert seed_rows(None, 0, 3) is None


def test_merge_keeps_order_and_adds_up_row_counts():
    one = DroppedRow(by="pipeline", reason="bad", row={"task": "b"})
    parts = [
        Generated(pd.DataFrame({"x": [1, 2]}), [], {"resumed_rows": 2, "buffer_size": 50}),
        Generated(pd.DataFrame({"x": [3]}), [one], {"resumed_rows": 1, "buffer_size": 60}),
    ]
    out = merge(parts)
    assert list(out.dataset["x"]) == [1, 2, 3]
    assert out.dropped == [one]
    assert out.summary == {"resumed_rows": 3, "buffer_size": 50}
