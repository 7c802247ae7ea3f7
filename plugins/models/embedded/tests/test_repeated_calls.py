"""A reply with tools stops at its third identical tool call (the embedded model once filled
1,024 tokens, 400 s, with one call said again and again). The check is a pure function of the
text generated so far; the engine calls it as each token arrives."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")


CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>\n'
SAME = '<tool_call>\n{"arguments": {"path": "a.txt"}, "name": "read_file"}\n</tool_call>'
OTHER = '<tool_call>\n{"name": "read_file", "arguments": {"path": "b.txt"}}\n</tool_call>\n'


@pytest.mark.parametrize(
    ("text", "stops"),
    [
        (CALL * 3, True),
        (CALL * 2 + SAME, True),  # key order does not make a call different
        (CALL * 2, False),
        (CALL + OTHER + CALL, False),
        (CALL * 3 + "<tool_call>\n{", False),  # checked as a call closes, not mid-call
        ("I will read a.txt. " * 10, False),
    ],
)
def test_a_reply_stops_at_its_third_identical_call(text: str, stops: bool) -> None:
    from bashgym_models_embedded.server import repeats_a_call

    assert repeats_a_call(text, 3) is stops
