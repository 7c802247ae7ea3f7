"""Agreement and triangulation on hand-made answer sets: tolerances, near-ties, mixed types."""

from __future__ import annotations

import pandas as pd
import pytest
from bashgym_pipelines_csv_triangulation.answers import normalize
from bashgym_pipelines_csv_triangulation.matching import MatchOptions, triangulate, values_match

OPT = MatchOptions()


def agree(a, b, **kw):
    return values_match(normalize(a), normalize(b), OPT, **kw)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (3.14159, 3.14, True),  # rounded to two decimals
        (3.0, 3.03, True),  # on the boundary: 1% of the larger
        (3.0, 3.0304, False),
        (0.047, -0.047, False),  # opposite signs never agree
        (-3.0, -3.02, True),
        (10, 10.0, True),
        (1_000_000.0, 1_000_000.09, True),
        ("North", " north ", True),
        ("New  York", "new york", True),
        ("North", "South", False),
        (True, 1, False),  # a bool is no number
        (None, 0, False),
        (None, float("nan"), True),  # both "no value"
        ([1, 2, 3], [1.005, 2, 3], True),
        ([1, 2, 3], [3, 2, 1], False),  # lists keep their order
        ({"a": 1, "B": 2.0}, {"b": 2.01, "A": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("42", 42, True),  # numeric text normalizes to the number
        ([42], 42.0, True),
    ],
)
def test_values_match(a, b, expected):
    assert agree(a, b) is expected
    assert agree(b, a) is expected


def test_p_values_use_their_own_tolerance_by_key_or_by_declaration():
    assert agree({"statistic": 2.0, "pvalue": 0.031}, {"statistic": 2.01, "pvalue": 0.0325})
    assert not agree({"statistic": 2.0, "p_value": 0.031}, {"statistic": 2.0, "p_value": 0.04})
    assert agree({"statistic": 2.0, "t": 0.031}, {"statistic": 2.0, "t": 0.035})  # not a p
    assert agree({"ttest_p": 0.01}, {"ttest_p": 0.0115})
    assert not agree({"ttest_p": 0.01}, {"ttest_p": 0.013})
    assert agree(0.01, 0.014)  # a bare number is a float ...
    assert not agree(0.01, 0.014, p_value=True)  # ... unless the answer is declared a p-value


def test_frames_ignore_row_order_and_align_columns_by_name():
    a = pd.DataFrame({"region": ["N", "S", "E"], "total": [4.0, 2.0, 7.0]})
    assert agree(a, a.iloc[::-1])
    assert agree(a, a[["total", "region"]])
    assert agree(a, a.assign(total=a.total + 0.02))
    assert not agree(a, a.assign(total=[4.0, 2.0, 7.5]))
    renamed = a.rename(columns={"total": "sum_sales"})
    assert agree(a, renamed)  # different names: compared by position
    assert not agree(a, a.head(2))


def test_frames_pair_rows_that_tolerance_reorders():
    # Sorted exactly, these rows pair up wrongly (0.96 < 1.0 swaps the order); the
    # assignment solver still finds the pairing where every row agrees.
    a = pd.DataFrame({"k": ["x", "y"], "v": [1.0, 0.96]})
    b = pd.DataFrame({"k": ["y", "x"], "v": [1.0, 0.965]})
    assert agree(a.assign(k="z"), b.assign(k="z"))
    assert not agree(a.assign(k="z"), b.assign(k="z", v=[1.0, 0.5]))


def test_mixed_shapes_of_one_grouped_answer_agree():
    df = pd.DataFrame({"region": ["N", "S", "N"], "sales": [1.0, 2.0, 3.0]})
    series = df.groupby("region")["sales"].sum()
    as_frame = series.reset_index()
    as_dict = {"N": 4.0, "S": 2.0}
    as_records = [{"region": "N", "sales": 4}, {"region": "S", "sales": 2}]
    for left in (series, as_frame, as_dict, as_records):
        for right in (series, as_frame, as_dict, as_records):
            assert agree(left, right), (left, right)
    assert not agree(series, {"N": 4.0, "S": 2.5})


def runs(*answers):
    return [(False, None) if a is FAILED else (True, normalize(a)) for a in answers]


FAILED = object()


def test_verified_when_gold_matches_the_majority():
    v = triangulate((True, 4.0), runs(4.0, 4.02, 3.98, 9.0, FAILED), OPT)
    assert v.verified and v.reason is None
    assert (v.support, v.runs, v.submitted) == (3, 5, 4)
    assert v.agreeing == [0, 1, 2]


def test_rejected_when_gold_disagrees_with_the_majority():
    v = triangulate((True, 5.0), runs(4.0, 4.0, 4.0, 5.0, 5.0), OPT)
    assert not v.verified
    assert v.reason == "gold answer disagrees with the majority"
    assert v.detail == "gold answer disagrees with the majority (3/5 agree on another answer)"
    assert v.majority == 4


def test_no_majority_when_too_few_agree_and_failed_runs_count_against():
    v = triangulate((True, 4.0), runs(4.0, 4.0, FAILED, FAILED, FAILED), OPT)
    assert not v.verified
    assert v.reason == "no majority among the consistency runs"
    assert v.detail == "2 of 5 consistency runs agree (more than 50% needed)"


def test_a_tie_between_disagreeing_answers_is_no_majority():
    v = triangulate((True, 1.0), runs(1.0, 1.0, 2.0, 2.0), MatchOptions(min_majority=0.4))
    assert not v.verified
    assert v.reason == "no majority among the consistency runs"
    assert v.detail == "a tie between answers (2 runs each)"


def test_near_ties_cluster_around_the_best_supported_centre():
    # At an absolute 0.1: 1.00 ~ 1.08 ~ 1.16 but 1.00 !~ 1.16: 1.08 agrees with all four.
    loose = MatchOptions(float_tolerance=0.1, relative_tolerance=0.0)
    v = triangulate((True, 1.0), runs(1.0, 1.08, 1.16, 1.16, FAILED), loose)
    assert v.verified
    assert v.majority == 1.08 and v.support == 4
    # The centre is 1.12 here (4 of 5); a gold of 1.0 is 0.12 away from it.
    v = triangulate((True, 1.0), runs(1.0, 1.05, 1.12, 1.2, 1.2), loose)
    assert v.majority == 1.12 and v.support == 4
    assert not v.verified and v.reason == "gold answer disagrees with the majority"


def test_exact_groups_collapse_before_tolerance():
    df = pd.DataFrame({"g": ["a", "b"], "v": [1, 2]})
    v = triangulate((True, normalize(df)), runs(df, df.iloc[::-1], df, {"a": 1, "b": 2}), OPT)
    assert v.verified and v.support == 4


def test_mixed_types_never_agree_by_accident():
    # text, bool, list, None and a number: five answers, none merged across types
    v = triangulate((True, 1), runs("one", True, [1, 2], None, "1.0"), OPT)
    assert not v.verified and v.support == 1
    assert v.detail == "a tie between answers (1 runs each)"
    # True, 1 and "true" are three different answers: True has 2 of 5
    v = triangulate((True, True), runs(True, 1, "true", None, True), OPT)
    assert not v.verified and v.support == 2 and v.majority is True
    assert v.detail.startswith("2 of 5")
    # and "1.0" is the number 1: with 1 and 1.0 besides, the number wins 3 of 5
    v = triangulate((True, 1), runs("1.0", 1, 1.0, True, "one"), OPT)
    assert v.verified and v.agreeing == [0, 1, 2]


def test_missing_gold_or_no_submissions_say_so():
    assert triangulate((False, None), runs(1, 1, 1), OPT).reason == "gold run submitted no answer"
    v = triangulate((True, 1), runs(FAILED, FAILED), OPT)
    assert v.reason == "no consistency run submitted an answer"
    assert v.detail == "no consistency run submitted an answer (0 of 2)"
