"""Normalization: one plain form per meaning, whatever shape a run submitted it in."""

from __future__ import annotations

import datetime as dt
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest
from bashgym_pipelines_csv_triangulation.answers import (
    FRAME,
    AnswerError,
    answer_hash,
    canonical,
    normalize,
)
from scipy import stats


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.int64(3), 3),
        (np.float64(3.0), 3),  # an integral float is the int
        (3.25, 3.25),
        (np.float32(0.5), 0.5),
        (float("nan"), None),
        (pd.NA, None),
        (pd.NaT, None),
        (np.bool_(True), True),
        (" 42 ", 42),  # numeric text is the number
        ("-0.50", -0.5),
        ("1e3", 1000),
        ("007", "007"),  # leading zeros: an identifier, kept as text
        (" North ", "North"),
        ([7], 7),  # one item is that item
        (pd.DataFrame({"x": [9]}), 9),
        (pd.Timestamp("2024-03-01"), "2024-03-01T00:00:00"),
        (dt.date(2024, 3, 1), "2024-03-01"),
        (np.array([1, 2, 3]), [1, 2, 3]),
        ({3, 1, 2}, [1, 2, 3]),
    ],
)
def test_scalars_and_small_collections(value, expected):
    assert normalize(value) == expected


def test_a_grouped_series_is_the_dict_of_its_groups():
    df = pd.DataFrame({"region": ["N", "S", "N"], "sales": [1.0, 2.0, 3.0]})
    grouped = df.groupby("region")["sales"].sum()
    assert normalize(grouped) == {"N": 4, "S": 2}
    assert normalize(grouped) == normalize(grouped.to_dict())
    assert normalize(grouped.to_frame()) == {"N": 4, "S": 2}  # one value column, named index


def test_a_filtered_series_is_a_list_whatever_its_leftover_index():
    df = pd.DataFrame({"name": ["a", "b", "c", "d"], "x": [1, 5, 2, 9]})
    picked = df[df.x > 1]["name"]
    assert list(picked.index) == [1, 2, 3]
    assert normalize(picked) == ["b", "c", "d"]
    assert normalize(picked.reset_index(drop=True)) == normalize(picked)


def test_frames_keep_columns_and_rows_and_records_become_frames():
    df = pd.DataFrame({"region": ["N", "S"], "total": [4, 2]})
    expected = {FRAME: {"columns": ["region", "total"], "rows": [["N", 4], ["S", 2]]}}
    assert normalize(df) == expected
    assert normalize(df.to_dict("records")) == expected
    filtered = pd.DataFrame({"region": ["x", "N", "S"], "total": [0, 4, 2]}).iloc[1:]
    assert normalize(filtered) == expected  # a filter's leftover index is dropped
    named = df.set_index("region")
    named["share"] = [0.5, 0.25]
    assert normalize(named)[FRAME]["columns"] == ["region", "total", "share"]


def test_scipy_results_and_named_tuples_are_dicts_of_their_fields():
    result = stats.ttest_ind([1, 2, 3, 4], [2, 3, 4, 5])
    plain = normalize(result)
    assert set(plain) >= {"statistic", "pvalue"}
    assert plain["pvalue"] == pytest.approx(result.pvalue)
    Point = namedtuple("Point", "x y")
    assert normalize(Point(np.int64(1), 2.0)) == {"x": 1, "y": 2}


def test_dict_keys_become_text():
    assert normalize({np.int64(1): "a", 2.0: "b", "c": np.float64(1.5)}) == {
        "1": "a",
        "2": "b",
        "c": 1.5,
    }


def test_canonical_form_and_hash_ignore_frame_row_and_column_order():
    a = pd.DataFrame({"region": ["N", "S"], "total": [4, 2]})
    b = a.iloc[::-1][["total", "region"]]
    assert answer_hash(normalize(a)) == answer_hash(normalize(b))
    assert canonical(normalize(a)) == canonical(normalize(b))
    assert answer_hash([1, 2]) != answer_hash([2, 1])  # a list keeps its order
    assert answer_hash({"a": 1, "b": 2}) == answer_hash({"b": 2, "a": 1})


def test_values_with_no_plain_form_are_refused():
    with pytest.raises(AnswerError, match="cannot submit a object"):
        normalize(object())
    deep: list = []
    for _ in range(30):
        deep = [deep, 0]
    with pytest.raises(AnswerError, match="too deeply"):
        normalize(deep)


def test_numpy_subclasses_of_python_types_come_out_plain():
    for value in (normalize(np.float64(2.5)), normalize(np.str_(" x ")), normalize(np.int64(2))):
        assert type(value).__module__ == "builtins"
