"""The submit/hook markers: only this episode's nonce counts; the rest is ordinary output."""

from __future__ import annotations

import pytest
from bashgym_pipelines_csv_triangulation.protocol import clip, extract, marker, new_nonce


def test_markers_with_the_nonce_are_taken_out_and_others_stay_as_text():
    nonce, other = new_nonce(), new_nonce()
    text = (
        "before\n"
        + marker("hook", nonce, {"name": "n", "value": 3})
        + "middle "
        + marker("submit", other, {"answer": 99})
        + marker("submit", nonce, {"answer": {"a": 1}})
        + "after"
    )
    found = extract(text, nonce)
    assert found.submissions == [{"answer": {"a": 1}}]
    assert found.hooks == [{"name": "n", "value": 3}]
    assert found.output.startswith("before\nmiddle <<bashgym:submit:" + other)
    assert found.output.endswith("after")


def test_a_cut_marker_is_not_a_submission():
    nonce = new_nonce()
    cut = marker("submit", nonce, {"answer": 1})[:-8]
    assert extract(cut, nonce).submissions == []


def test_markers_refuse_non_json_numbers():
    with pytest.raises(ValueError):
        marker("submit", new_nonce(), {"answer": float("inf")})


def test_clip_keeps_head_and_tail():
    text, cut = clip("a" * 50 + "b" * 50, 20)
    assert cut and text.startswith("a" * 10) and text.endswith("b" * 10)
    assert "[... 80 characters left out ...]" in text
    assert clip("short", 20) == ("short", False)
