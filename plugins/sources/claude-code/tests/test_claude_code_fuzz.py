"""Corrupted transcripts (truncated, flipped bytes, junk lines, empty, binary) never crash the
source, and every undecodable line is reported by file and line number, exactly once."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from bashgym_sources_claude_code.transcript import parse_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bashgym.records import Trace, trace_from_row, trace_to_row

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = sorted(FIXTURES.rglob("*.jsonl"))


def undecodable_lines(data: bytes) -> set[int]:
    """Line numbers (1-based, split on \\n like file iteration) that are not a JSON object."""
    out = set()
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            out.add(number)
            continue
        if not isinstance(value, dict):
            out.add(number)
    return out


def check(data: bytes, folder: Path) -> tuple[Trace | None, list[tuple[str, int, str]]]:
    path = folder / "t.jsonl"
    path.write_bytes(data)
    bad: list[tuple[str, int, str]] = []
    trace = parse_file(path, lambda f, n, why: bad.append((f, n, why)))
    assert all(f == str(path) for f, _, _ in bad)
    numbers = [n for _, n, _ in bad]
    assert len(numbers) == len(set(numbers)), "a line reported twice"
    undecodable = undecodable_lines(data)
    decode_reports = {n for _, n, why in bad if not why.startswith("unexpected shape")}
    assert decode_reports == undecodable
    if trace is not None:  # whatever survived is a valid Trace that round-trips
        assert trace_from_row(trace_to_row(trace)) == trace
        assert Trace.model_validate(trace.model_dump()) == trace
    return trace, bad


sample = st.sampled_from(SAMPLES).map(Path.read_bytes)
fuzz = settings(
    max_examples=120,
    deadline=None,
    database=None,
    # tmp_path is shared by the examples of one test on purpose: each rewrites t.jsonl
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@fuzz
@given(sample, st.floats(0, 1))
def test_truncated_anywhere(tmp_path, data, where):
    check(data[: int(len(data) * where)], tmp_path)


@fuzz
@given(sample, st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_flipped_bytes(tmp_path, data, flips):
    buf = bytearray(data)
    for where, value in flips:
        buf[min(int(len(buf) * where), len(buf) - 1)] = value
    check(bytes(buf), tmp_path)


junk = st.one_of(
    st.binary(min_size=1, max_size=200).map(lambda b: b.replace(b"\n", b"")),
    st.text(max_size=100).map(lambda t: t.replace("\n", "").encode()),
    st.sampled_from([b"[1, 2]", b'"text"', b"null", b"{", b'{"type": "assistant"}', b"\xff\xfe"]),
    st.sampled_from(
        [
            b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":5}]}}',
            b'{"type":"user","message":{"content":7}}',
            b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":null}]}}',
            b'{"type":"assistant","message":{"id":"m","usage":{"input_tokens":"9"},"model":1}}',
            b'{"type":"result","subtype":3,"is_error":true,"errors":[1,{"a":2}],"usage":[]}',
            b'{"type":"system","subtype":"init","tools":[1,"Bash"],"model":{}}',
        ]
    ),
)


@fuzz
@given(sample, st.lists(st.tuples(st.floats(0, 1), junk), min_size=1, max_size=6))
def test_junk_lines_inserted(tmp_path, data, inserts):
    lines = data.split(b"\n")
    for where, line in inserts:
        lines.insert(int(len(lines) * where), line)
    check(b"\n".join(lines), tmp_path)


@fuzz
@given(st.binary(max_size=3000))
def test_binary_files(tmp_path, data):
    check(data, tmp_path)


def test_empty_and_blank_files(tmp_path):
    assert check(b"", tmp_path) == (None, [])
    assert check(b"\n\n  \r\n", tmp_path) == (None, [])


def test_shape_errors_are_reported_not_raised(tmp_path):
    data = b'{"type":"user","message":{"content":7}}\n{"type":"assistant","message":"hi"}\n'
    trace, bad = check(data, tmp_path)
    assert trace is None
    assert [(n, why.split(":")[0]) for _, n, why in bad] == [
        (1, "unexpected shape"),
        (2, "unexpected shape"),
    ]


def test_bad_lines_go_to_run_notes_capped(tmp_path, read, run):
    folder = tmp_path / "-home-dev-x"
    folder.mkdir()
    good = (FIXTURES / "minimal_transcript.jsonl").read_bytes()
    (folder / "s.jsonl").write_bytes(good + b"{not json\n" * 60 + b'{"type": "user", "mess')
    (trace,) = read(path=str(tmp_path))
    assert len(trace.messages) == 4  # the good part survives
    assert run.counts["source.bad_lines"] == 61
    path = folder / "s.jsonl"
    assert run.notes[0].startswith(f"claude-code: {path}:8: invalid JSON")
    assert len(run.notes) == 51
    assert run.notes[-1] == (
        "claude-code: 11 more bad lines not listed (61 in all, counted as source.bad_lines)"
    )


@pytest.mark.parametrize("name", ["agent-1.jsonl", "x.jsonl"])
def test_unreadable_file_is_reported(tmp_path, name):
    missing = tmp_path / name
    bad: list[tuple[str, int, str]] = []
    assert parse_file(missing, lambda f, n, why: bad.append((f, n, why))) is None
    assert bad[0][0] == str(missing) and bad[0][2].startswith("cannot open")
