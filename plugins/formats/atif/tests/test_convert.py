"""ATIF <-> Trace conversion: mapping, exact round trips both ways, validation."""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from bashgym_formats_atif import atif_to_trace, dump_atif, load_atif, trace_to_atif

from bashgym.records import (
    Message,
    Outcome,
    Provenance,
    Timing,
    ToolCall,
    ToolSchema,
    Trace,
    Usage,
)

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE = FIXTURES / "atif_example.json"


def _sample() -> dict:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def _assert_doc_roundtrip(doc: dict) -> Trace:
    original = copy.deepcopy(doc)
    trace = atif_to_trace(doc)
    assert doc == original, "reading must not mutate the input"
    out = trace_to_atif(trace)
    assert out == doc
    # same bytes too: key order and number types (1 vs 1.0) survive
    assert json.dumps(out, ensure_ascii=False) == json.dumps(doc, ensure_ascii=False)
    # and the Trace read back from our own output is the same Trace
    assert atif_to_trace(out) == trace
    # what is parked in extra dicts is plain JSON: the Trace itself survives a JSON sink
    assert Trace.model_validate_json(trace.model_dump_json()) == trace
    return trace


def _assert_strict_atif(doc: dict) -> None:
    """What strict ATIF validators check (Harbor RFC 0001): sequential step ids, known sources,
    ISO timestamps, agent-only fields on agent steps, results naming a call of their own step."""
    assert isinstance(doc["agent"]["name"], str) and isinstance(doc["agent"]["version"], str)
    for i, step in enumerate(doc["steps"]):
        assert step["step_id"] == i + 1
        assert step["source"] in ("system", "user", "agent")
        assert isinstance(step["message"], str)
        if "timestamp" in step:
            datetime.fromisoformat(step["timestamp"])
        if step["source"] != "agent":
            assert not {"model_name", "reasoning_content", "tool_calls", "metrics"} & set(step)
        call_ids = {c["tool_call_id"] for c in step.get("tool_calls") or []}
        assert all(isinstance(c["arguments"], dict) for c in step.get("tool_calls") or [])
        for result in (step.get("observation") or {}).get("results", []):
            assert result.get("source_call_id") in call_ids | {None}


def _assert_trace_roundtrip(trace: Trace) -> dict:
    doc = trace_to_atif(trace)
    json.dumps(doc)  # plain JSON, nothing Python-only inside
    _assert_strict_atif(doc)
    back = atif_to_trace(doc)
    assert back == trace
    assert trace_to_atif(back) == doc
    return doc


# ------------------------------------------------------------------------------------------
# the shipped sample


def test_sample_parses_to_expected_messages():
    doc = _sample()
    trace = atif_to_trace(doc)

    assert trace.id == doc["session_id"]
    assert trace.provenance.session_id == doc["session_id"]
    assert trace.provenance.source == "atif"
    assert trace.provenance.agent == "claude-code"
    assert trace.provenance.agent_version == "2.1.197"
    assert trace.provenance.model == "claude-sonnet-4-5"
    assert trace.system_prompt is None
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[0].content == "create f.txt with hello"
    assert trace.messages[0].timestamp == datetime(2026, 11, 21, 5, 22, 18, 573000, tzinfo=UTC)

    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.name) == ("toolu_01AAA", "Bash")
    assert call.arguments_dict() == {"command": "echo hello > f.txt && cat f.txt"}
    result = trace.messages[2]
    assert result.tool_call_id == call.id
    assert result.content == "hello"
    assert trace.messages[3].content == "Done: f.txt contains hello."
    assert trace.messages[3].tool_calls == []
    assert trace.tool_call_count == 1
    # per-step metrics stay on the assistant message that produced them
    assert trace.messages[1].extra["metrics"] == doc["steps"][1]["metrics"]
    assert trace.messages[3].extra["metrics"] == doc["steps"][2]["metrics"]


def test_sample_usage_and_cost_are_the_file_totals():
    doc = _sample()
    trace = atif_to_trace(doc)
    metrics = [s["metrics"] for s in doc["steps"] if "metrics" in s]
    prompt = sum(m["prompt_tokens"] for m in metrics)
    cached = sum(m["cached_tokens"] for m in metrics)
    completion = sum(m["completion_tokens"] for m in metrics)
    final = doc["final_metrics"]
    assert (prompt, completion, cached) == (
        final["total_prompt_tokens"],
        final["total_completion_tokens"],
        final["total_cached_tokens"],
    )
    # ATIF prompt tokens include cached ones; BashGym keeps them apart
    assert trace.usage == Usage(
        input_tokens=prompt - cached, output_tokens=completion, cache_read_tokens=cached
    )
    assert trace.cost_usd == pytest.approx(final["total_cost_usd"])
    assert trace.timing.started_at == trace.messages[0].timestamp
    assert trace.timing.duration_s == pytest.approx(0.33)


def test_sample_roundtrips_exactly():
    _assert_doc_roundtrip(_sample())


def test_load_and_dump_files(tmp_path):
    trace = load_atif(SAMPLE)
    assert trace.provenance.source_file == str(SAMPLE)
    out = dump_atif(trace, tmp_path / "out" / "trajectory.json")
    assert json.loads(out.read_text(encoding="utf-8")) == _sample()
    # a file BashGym wrote reads back as the very Trace it was written from
    rich = _rich_trace()
    assert load_atif(dump_atif(rich, tmp_path / "rich.json")) == rich


def test_edits_win_over_parked_originals():
    doc = _sample()
    doc["steps"][0]["timestamp"] = "2026-11-21 05:22:18+00:00"  # non-canonical: gets parked
    trace = atif_to_trace(doc)
    assert trace_to_atif(trace) == doc
    trace.messages[0].timestamp = datetime(2027, 1, 1, tzinfo=UTC)
    trace.messages[0].content = "changed"
    trace.usage = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3)
    trace.cost_usd = 0.5
    out = trace_to_atif(trace)
    assert out["steps"][0]["timestamp"] == "2027-01-01T00:00:00Z"
    assert out["steps"][0]["message"] == "changed"
    assert out["final_metrics"]["total_prompt_tokens"] == 4
    assert out["final_metrics"]["total_cached_tokens"] == 3
    assert out["final_metrics"]["total_cost_usd"] == 0.5
    assert atif_to_trace(out).usage == trace.usage


# ------------------------------------------------------------------------------------------
# the spec's own example (Harbor RFC 0001, multi-tool step, reasoning, logprobs, extras)


def _rfc_doc() -> dict:
    return {
        "schema_version": "ATIF-v1.4",
        "session_id": "025B810F-B3A2-4C67-93C0-FE7A142A947A",
        "agent": {
            "name": "harbor-agent",
            "version": "1.0.0",
            "model_name": "gemini-2.5-flash",
            "extra": {},
        },
        "notes": "multi-tool execution in step 2",
        "extra": {},
        "final_metrics": {
            "total_prompt_tokens": 1120,
            "total_completion_tokens": 124,
            "total_cached_tokens": 200,
            "total_cost_usd": 0.00078,
            "total_steps": 3,
            "extra": {},
        },
        "steps": [
            {
                "step_id": 1,
                "timestamp": "2025-10-11T10:30:00Z",
                "source": "user",
                "message": "What is the current trading price of Alphabet (GOOGL)?",
                "extra": {},
            },
            {
                "step_id": 2,
                "timestamp": "2025-10-11T10:30:02Z",
                "source": "agent",
                "model_name": "gemini-2.5-flash",
                "reasoning_effort": "medium",
                "message": "I will search for the price and volume.",
                "reasoning_content": "Two data points: price and volume.",
                "tool_calls": [
                    {
                        "tool_call_id": "call_price_1",
                        "function_name": "financial_search",
                        "arguments": {"ticker": "GOOGL", "metric": "price"},
                    },
                    {
                        "tool_call_id": "call_volume_2",
                        "function_name": "financial_search",
                        "arguments": {"ticker": "GOOGL", "metric": "volume"},
                    },
                ],
                "observation": {
                    "results": [
                        {"source_call_id": "call_price_1", "content": "GOOGL is at $185.35"},
                        {"source_call_id": "call_volume_2", "content": "GOOGL volume: 1.5M"},
                    ]
                },
                "metrics": {
                    "prompt_tokens": 520,
                    "completion_tokens": 80,
                    "cached_tokens": 200,
                    "cost_usd": 0.00045,
                },
            },
            {
                "step_id": 3,
                "timestamp": "2025-10-11T10:30:05Z",
                "source": "agent",
                "model_name": "gemini-2.5-flash",
                "reasoning_effort": "low",
                "message": "GOOGL trades at $185.35 on 1.5M volume.",
                "reasoning_content": "Format the answer.",
                "metrics": {
                    "prompt_tokens": 600,
                    "completion_tokens": 44,
                    "completion_token_ids": [1722, 310, 5533],
                    "logprobs": [-0.1, -0.05, -0.02],
                    "cost_usd": 0.00033,
                    "extra": {"reasoning_tokens": 12},
                },
            },
        ],
    }


def test_spec_example_maps_and_roundtrips():
    doc = _rfc_doc()
    trace = _assert_doc_roundtrip(doc)
    assistant = trace.messages[1]
    assert assistant.reasoning == "Two data points: price and volume."
    assert [c.name for c in assistant.tool_calls] == ["financial_search"] * 2
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    by_id = {m.tool_call_id: m.content for m in trace.messages if m.role == "tool"}
    assert by_id == {"call_price_1": "GOOGL is at $185.35", "call_volume_2": "GOOGL volume: 1.5M"}
    assert trace.usage == Usage(input_tokens=920, output_tokens=124, cache_read_tokens=200)
    assert trace.cost_usd == 0.00078


def test_usage_falls_back_to_step_sums_without_final_metrics():
    doc = _rfc_doc()
    del doc["final_metrics"]
    trace = _assert_doc_roundtrip(doc)
    assert trace.usage == Usage(input_tokens=920, output_tokens=124, cache_read_tokens=200)
    assert trace.cost_usd == pytest.approx(0.00078)
    assert "final_metrics" not in trace_to_atif(trace)


# ------------------------------------------------------------------------------------------
# Trace -> ATIF -> Trace


def _rich_trace() -> Trace:
    t0 = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
    sub = Trace(
        id="sub-1",
        messages=[
            Message(role="user", content="look at README"),
            Message(
                role="assistant",
                content="",
                tool_calls=[
                    ToolCall(id="s1", name="Read", arguments='{"file_path": "/r/README.md"}')
                ],
            ),
            Message(role="tool", content="# readme", tool_call_id="s1", name="Read"),
            Message(role="assistant", content="It is a readme."),
        ],
        usage=Usage(input_tokens=10, output_tokens=5),
        provenance=Provenance(
            source="claude-code",
            session_id="sess-1",
            agent="claude-code",
            parent_session_id="sess-1",
            extra={"agentType": "Explore"},
        ),
    )
    return Trace(
        id="trace-1",
        system_prompt="You are a careful coding agent.",
        tools=[
            ToolSchema(
                name="Bash",
                description="Run a shell command",
                parameters={
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                },
            ),
            ToolSchema(name="Read"),
        ],
        messages=[
            Message(role="user", content="fix the failing test", timestamp=t0),
            Message(
                role="assistant",
                content="Let me look.",
                reasoning="Start with the test.",
                timestamp=t0 + timedelta(seconds=1),
                tool_calls=[
                    ToolCall(id="c1", name="Bash", arguments='{"command": "pytest -q"}'),
                    ToolCall(id="c2", name="Read", arguments='{"file_path":"a.py"}'),
                    ToolCall(id="c3", name="Bash", arguments="not json"),
                ],
                extra={
                    "metrics": {
                        "prompt_tokens": 50,
                        "completion_tokens": 9,
                        "cached_tokens": 40,
                        "cost_usd": 0.001,
                    },
                    "stop_reason": "tool_use",
                },
            ),
            Message(
                role="tool",
                content="1 failed",
                tool_call_id="c1",
                name="Bash",
                is_error=True,
                timestamp=t0 + timedelta(seconds=2),
            ),
            Message(role="tool", content="def f(): ...", tool_call_id="c2", name="Read"),
            Message(role="tool", content="error: bad args", tool_call_id="c3", is_error=True),
            Message(role="system", content="Context was compacted."),
            Message(role="tool", content="late output", tool_call_id="c1"),  # not its step's
            Message(
                role="assistant",
                content="Fixed: off-by-one in f().",
                timestamp=t0 + timedelta(seconds=9),
            ),
        ],
        usage=Usage(
            input_tokens=100, output_tokens=30, cache_creation_tokens=500, cache_read_tokens=4000
        ),
        cost_usd=0.0421,
        timing=Timing(started_at=t0, ended_at=t0 + timedelta(seconds=10), duration_s=10.0),
        outcome=Outcome(success=True, num_turns=3),
        provenance=Provenance(
            source="claude-code",
            source_file="/home/dev/s.jsonl",
            line=7,
            session_id="sess-1",
            agent="claude-code",
            agent_version="2.1.197",
            model="claude-sonnet-4-5",
            cwd="/home/dev/repo",
            git_branch="fix/off-by-one",
            git_commit="abc123",
            extra={"entrypoint": "cli"},
        ),
        subagents=[sub],
        extra={"permission_denials": [], "bashgym": {"run": 3}},
    )


def test_rich_trace_roundtrips():
    doc = _assert_trace_roundtrip(_rich_trace())
    # and the ATIF written is ATIF a Harbor reader understands natively
    assert doc["schema_version"].startswith("ATIF-v1.")
    assert doc["session_id"] == "sess-1"
    assert doc["agent"]["model_name"] == "claude-sonnet-4-5"
    assert doc["agent"]["tool_definitions"][0] == {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Run a shell command",
            "parameters": _rich_trace().tools[0].parameters,
        },
    }
    steps = doc["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "system", "agent"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4, 5]
    assert steps[0]["message"] == "You are a careful coding agent."
    agent = steps[2]
    assert agent["reasoning_content"] == "Start with the test."
    assert agent["timestamp"] == "2026-03-01T12:00:01.123Z"
    assert [c["arguments"] for c in agent["tool_calls"]] == [
        {"command": "pytest -q"},
        {"file_path": "a.py"},
        {"_raw": "not json"},
    ]
    assert [r["source_call_id"] for r in agent["observation"]["results"]] == ["c1", "c2", "c3"]
    assert agent["metrics"]["cached_tokens"] == 40
    final = doc["final_metrics"]
    assert final["total_prompt_tokens"] == 100 + 4000 + 500
    assert final["total_cached_tokens"] == 4000
    assert final["total_completion_tokens"] == 30
    assert final["total_cost_usd"] == 0.0421
    assert final["total_steps"] == 5
    bashgym = doc["extra"]["bashgym"]
    assert bashgym["outcome"] == {"success": True, "num_turns": 3}
    assert bashgym["provenance"]["git_branch"] == "fix/off-by-one"
    sub = bashgym["subagents"][0]
    assert (sub["session_id"], sub["extra"]["bashgym"]["id"]) == ("sess-1", "sub-1")
    assert sub["steps"][0]["message"] == "look at README"
    # a result that answers a call of an earlier step keeps its id out of source_call_id
    late = steps[3]["observation"]["results"][0]
    assert late == {"content": "late output"}
    assert steps[3]["extra"]["bashgym"]["results"]["0"]["tool_call_id"] == "c1"
    assert doc["extra"]["permission_denials"] == []


def test_minimal_trace_writes_minimal_atif():
    trace = Trace(
        id="t",
        messages=[Message(role="user", content="hi"), Message(role="assistant", content="hello")],
    )
    doc = _assert_trace_roundtrip(trace)
    assert "final_metrics" not in doc
    assert [s["source"] for s in doc["steps"]] == ["user", "agent"]
    assert doc["agent"] == {"name": "unknown", "version": "unknown"}


# ------------------------------------------------------------------------------------------
# randomized round trips (hypothesis is not a dependency: a seeded generator instead)

_TEXTS = ["", "hello", "ünïcødé ✓ 日本", "line1\nline2\n", '{"looks": "like json"}', "  pad  "]
_ARGS = [
    '{"a": 1}',
    '{"a":1}',
    "not json",
    "[1, 2]",
    "",
    '{"cmd": "ls -la", "n": 2.5}',
    '{"x": NaN}',
    '"str"',
    "{}",
    '{"u": "\\u00e9"}',
    '{"u": "é", "n": null, "l": [1, {}]}',
    '{"a": 1, "a": 2}',
    "null",
]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice("abc xyz\t\n\"'{}é") for _ in range(rng.randint(0, 12)))
    return rng.choice(_TEXTS)


def _maybe(rng: random.Random, value, p: float = 0.5):
    return value if rng.random() < p else None


def _timestamp(rng: random.Random):
    base = datetime(2026, 1, 1, 0, 0, 0) + timedelta(seconds=rng.randint(0, 10**7))
    micro = rng.choice([0, 123000, 123456])
    tz = rng.choice([UTC, None, timezone(timedelta(hours=5, minutes=30))])
    return base.replace(microsecond=micro, tzinfo=tz)


def _json_value(rng: random.Random, depth: int = 0):
    kind = rng.randint(0, 7 if depth < 2 else 4)
    if kind == 5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 6:
        return {f"k{i}": _json_value(rng, depth + 1) for i in range(rng.randint(0, 3))}
    return [None, True, rng.randint(-5, 10**6), rng.random() * 100, _text(rng), None, None, 1.0][
        kind
    ]


def _extra(rng: random.Random, *, metrics: bool = False) -> dict:
    out = {}
    for _ in range(rng.choice([0, 0, 1, 2])):
        out[rng.choice(["stop_reason", "uuid", "bashgym", "k", "extra", "nested"])] = _json_value(
            rng
        )
    if metrics and rng.random() < 0.4:
        out["metrics"] = rng.choice(
            [
                {
                    "prompt_tokens": rng.randint(0, 999),
                    "completion_tokens": rng.randint(0, 99),
                    "cached_tokens": rng.randint(0, 50),
                },
                {"prompt_tokens": 10, "cost_usd": rng.choice([0.001, 1, 0.5])},
                {"prompt_tokens": "not a number"},
                None,
                7,
                {"prompt_tokens": 5, "extra": {"cache_creation_input_tokens": 3}},
            ]
        )
    return out


def _message(rng: random.Random, role: str, call_ids: list[str]) -> Message:
    fields: dict = {"role": role, "content": _text(rng), "extra": _extra(rng, metrics=True)}
    if rng.random() < 0.4:
        fields["timestamp"] = _timestamp(rng)
    if role == "assistant":
        fields["reasoning"] = _maybe(rng, _text(rng), 0.3)
        calls = []
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            call_ids.append(f"call_{rng.randint(0, 10**6)}")
            calls.append(
                ToolCall(
                    id=call_ids[-1],
                    name=rng.choice(["Bash", "Read", "é"]),
                    arguments=rng.choice(_ARGS),
                )
            )
        fields["tool_calls"] = calls
    elif role == "tool":
        fields["tool_call_id"] = (
            rng.choice(call_ids) if call_ids and rng.random() < 0.8 else _maybe(rng, "orphan", 0.5)
        )
        fields["name"] = _maybe(rng, rng.choice(["Bash", "Read"]), 0.5)
        fields["is_error"] = rng.random() < 0.2
    if rng.random() < 0.05:  # odd but allowed by the model: fields on unusual roles
        fields["name"] = "n"
        fields["reasoning"] = "r"
        fields["tool_call_id"] = "x"
        fields["is_error"] = True
        fields["tool_calls"] = [ToolCall(id="odd", name="odd")]
    return Message(**fields)


def _random_trace(rng: random.Random, depth: int = 0) -> Trace:
    messages, call_ids = [], []
    for _ in range(rng.randint(0, 12)):
        role = rng.choices(["user", "assistant", "tool", "system"], [3, 4, 4, 1])[0]
        if (
            role == "tool"
            and messages
            and messages[-1].role == "assistant"
            and messages[-1].tool_calls
            and rng.random() < 0.7
        ):
            for call in messages[-1].tool_calls:  # the usual shape: one result per call
                messages.append(
                    Message(
                        role="tool",
                        content=_text(rng),
                        tool_call_id=call.id,
                        is_error=rng.random() < 0.2,
                    )
                )
            continue
        messages.append(_message(rng, role, call_ids))
    usage = rng.choice(
        [
            Usage(),
            Usage(
                input_tokens=rng.randint(0, 10**5),
                output_tokens=rng.randint(0, 10**4),
                cache_creation_tokens=rng.choice([0, 77]),
                cache_read_tokens=rng.choice([0, 1234]),
            ),
            Usage(input_tokens=-1),
        ]
    )
    session = rng.choice([None, "sess", "trace-id"])
    trace_id = "trace-id" if rng.random() < 0.5 else f"id-{rng.randint(0, 99)}"
    return Trace(
        id=trace_id,
        system_prompt=rng.choice([None, None, "", "You are helpful.", _text(rng)]),
        messages=messages,
        tools=[
            ToolSchema(
                name=rng.choice(["Bash", "Read", "Edit"]),
                description=rng.choice(["", "does things"]),
                **(
                    {"parameters": {"type": "object", "properties": {"p": {"type": "string"}}}}
                    if rng.random() < 0.5
                    else {}
                ),
            )
            for _ in range(rng.choice([0, 0, 1, 3]))
        ],
        usage=usage,
        cost_usd=rng.choice([None, 0.0, 0.0123, 2.0, 1e-7]),
        timing=rng.choice(
            [
                Timing(),
                Timing(started_at=_timestamp(rng)),
                Timing(
                    started_at=_timestamp(rng), ended_at=_timestamp(rng), duration_s=rng.random()
                ),
            ]
        ),
        outcome=rng.choice(
            [
                Outcome(),
                Outcome(success=False, error_kind="max_turns", error_message="limit", num_turns=5),
                Outcome(success=True),
            ]
        ),
        provenance=Provenance(
            source=rng.choice([None, "claude-code", "atif", "codex"]),
            source_file=_maybe(rng, "/x/session.jsonl", 0.4),
            line=_maybe(rng, 3, 0.2),
            session_id=None if session is None else trace_id if session == "trace-id" else "sess",
            agent=_maybe(rng, "claude-code", 0.6),
            agent_version=_maybe(rng, "2.0", 0.5),
            model=_maybe(rng, "claude-x", 0.6),
            executor=_maybe(rng, "local", 0.2),
            cwd=_maybe(rng, "/repo", 0.3),
            git_branch=_maybe(rng, "main", 0.3),
            git_commit=_maybe(rng, "deadbeef", 0.3),
            parent_session_id=_maybe(rng, "parent", 0.2),
            extra=_extra(rng),
        ),
        subagents=[
            _random_trace(rng, depth + 1)
            for _ in range(rng.choice([0, 0, 0, 1, 2]) if depth == 0 else 0)
        ],
        extra=_extra(rng),
    )


def test_random_traces_roundtrip():
    rng = random.Random(20260301)
    for _ in range(400):
        trace = _random_trace(rng)
        _assert_trace_roundtrip(trace)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # not a dependency; the seeded loop above covers the same ground
    pass
else:

    @settings(max_examples=200, deadline=None)
    @given(st.integers(min_value=0, max_value=2**32))
    def test_random_traces_roundtrip_hypothesis(seed):
        _assert_trace_roundtrip(_random_trace(random.Random(seed)))


_TS_STRINGS = [
    "2025-10-11T10:30:00Z",
    "2025-10-11T10:30:00.123Z",
    "2025-10-11T10:30:00+00:00",
    "2025-10-11T10:30:00.123456+02:00",
    "2025-10-11 10:30:00",
    "2025-10-11",
    "2025-10-11T10:30:00.100Z",
    "yesterday",
    "2025-10-11T10:30:00",
]


def _shuffled(rng: random.Random, obj: dict) -> dict:
    if rng.random() < 0.15:
        items = list(obj.items())
        rng.shuffle(items)
        return dict(items)
    return obj


def _random_doc(rng: random.Random) -> dict:
    """A foreign ATIF document: optional keys present, absent or null, unknown keys, odd
    timestamps, content parts, irregular step ids, inconsistent totals."""
    agent_model = rng.choice(["m-1", None, "ABSENT"])
    agent: dict = {"name": rng.choice(["terminus-2", "claude-code", ""]), "version": "1.0"}
    if agent_model != "ABSENT":
        agent["model_name"] = agent_model
    tool_defs = rng.choice(
        [
            "ABSENT",
            None,
            [],
            [
                {
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "description": "run",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
            ],
            [{"type": "function", "function": {"name": "bash"}}],
            [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}],
            [{"name": "flat", "parameters": {"type": "object"}, "strict": True}],
        ]
    )
    if tool_defs != "ABSENT":
        agent["tool_definitions"] = tool_defs
    if rng.random() < 0.3:
        agent["extra"] = rng.choice([{}, {"temperature": 0.2}])
    doc: dict = {
        "schema_version": rng.choice(["ATIF-v1.6", "ATIF-v1.4", "ATIF-v1.2"]),
        "session_id": f"s-{rng.randint(0, 999)}",
        "agent": _shuffled(rng, agent),
    }
    steps = []
    for i in range(rng.randint(0, 8)):
        source = rng.choices(["system", "user", "agent"], [1, 2, 4])[0]
        step: dict = {"step_id": i + 1 if rng.random() < 0.9 else rng.randint(0, 50)}
        ts = rng.choice(["ABSENT", None, *_TS_STRINGS])
        if ts != "ABSENT":
            step["timestamp"] = ts
        step["source"] = source
        step["message"] = (
            _text(rng)
            if rng.random() < 0.9
            else [
                {"type": "text", "text": _text(rng)},
                {"type": "image", "source": {"path": "a.png"}},
            ]
        )
        call_ids = []
        if source == "agent":
            model = rng.choice(["ABSENT", "same", "other", None])
            if model == "same" and agent_model not in (None, "ABSENT"):
                step["model_name"] = agent_model
            elif model == "other":
                step["model_name"] = "m-2"
            elif model is None:
                step["model_name"] = None
            if rng.random() < 0.3:
                step["reasoning_effort"] = rng.choice(["low", 0.7])
            reasoning = rng.choice(["ABSENT", None, "thinking..."])
            if reasoning != "ABSENT":
                step["reasoning_content"] = reasoning
            calls = rng.choice(["ABSENT", None, [], "some"])
            if calls == "some":
                calls = []
                for j in range(rng.randint(1, 3)):
                    call_ids.append(f"c{i}_{j}")
                    calls.append(
                        _shuffled(
                            rng,
                            {
                                "tool_call_id": call_ids[-1],
                                "function_name": "bash",
                                "arguments": {
                                    "keystrokes": _text(rng),
                                    "n": rng.choice([1, 1.0, 2.5]),
                                    "nested": {"é": [None, True]},
                                },
                            },
                        )
                    )
            if calls != "ABSENT":
                step["tool_calls"] = calls
            metrics = rng.choice(
                [
                    "ABSENT",
                    None,
                    {
                        "prompt_tokens": rng.randint(0, 900),
                        "completion_tokens": rng.randint(0, 90),
                        "cached_tokens": rng.randint(0, 100),
                        "cost_usd": rng.choice([0.01, 1]),
                    },
                    {
                        "prompt_tokens": 10,
                        "logprobs": [-0.1],
                        "extra": {"cache_creation_input_tokens": 4},
                    },
                    {},
                ]
            )
            if metrics != "ABSENT":
                step["metrics"] = metrics
        elif rng.random() < 0.1:
            step["model_name"] = "foreign-on-non-agent"
            step["metrics"] = {"prompt_tokens": 1}
        if source in ("agent", "system") or rng.random() < 0.1:
            obs = rng.choice(["ABSENT", None, {"results": []}, "some"])
            if obs == "some":
                results = []
                for _ in range(rng.randint(1, 3)):
                    result: dict = {}
                    sid = rng.choice(["id", "ABSENT", None])
                    if sid == "id":
                        result["source_call_id"] = rng.choice(call_ids or ["x"])
                    elif sid is None:
                        result["source_call_id"] = None
                    content = rng.choice(["text", "ABSENT", None, "parts"])
                    if content == "text":
                        result["content"] = _text(rng)
                    elif content == "parts":
                        result["content"] = [{"type": "text", "text": "a"}]
                    elif content is None:
                        result["content"] = None
                    if rng.random() < 0.2:
                        result["subagent_trajectory_ref"] = [
                            {"session_id": "sub", "trajectory_path": "s.json"}
                        ]
                    results.append(_shuffled(rng, result))
                obs = {"results": results}
                if rng.random() < 0.1:
                    obs["note"] = "x"
            if obs != "ABSENT":
                step["observation"] = obs
        if rng.random() < 0.3:
            step["extra"] = rng.choice([{}, None, {"k": 1}, {"bashgym": {}}])
        if rng.random() < 0.05:
            step["is_copied_context"] = True
        steps.append(_shuffled(rng, step))
    doc["steps"] = steps
    if rng.random() < 0.2:
        doc["notes"] = "n"
    final = rng.choice(["ABSENT", None, "sums", "other", "partial", "int-cost"])
    metrics = [s["metrics"] for s in steps if isinstance(s.get("metrics"), dict)]
    if final == "sums":
        doc["final_metrics"] = {
            "total_prompt_tokens": sum(m.get("prompt_tokens", 0) for m in metrics),
            "total_completion_tokens": sum(m.get("completion_tokens", 0) for m in metrics),
            "total_cached_tokens": sum(m.get("cached_tokens", 0) for m in metrics),
            "total_steps": len(steps),
        }
    elif final == "other":
        doc["final_metrics"] = {
            "total_prompt_tokens": 5,
            "total_completion_tokens": 7,
            "total_cached_tokens": 9,
            "total_cost_usd": 0.3,
            "total_steps": 99,
            "extra": {"wall_s": 3},
        }
    elif final == "partial":
        doc["final_metrics"] = {"total_steps": len(steps)}
    elif final == "int-cost":
        doc["final_metrics"] = {"total_prompt_tokens": 10, "total_cost_usd": 1}
    elif final is None:
        doc["final_metrics"] = None
    if rng.random() < 0.3:
        doc["extra"] = rng.choice([{}, None, {"harbor": {"trial": 1}}, {"bashgym": {}}])
    if rng.random() < 0.1:
        doc["continued_trajectory_ref"] = "next.json"
    return _shuffled(rng, doc)


def test_random_atif_docs_roundtrip():
    rng = random.Random(1604)
    for _ in range(600):
        doc = _random_doc(rng)
        trace = _assert_doc_roundtrip(doc)
        # Trace -> ATIF -> Trace holds for traces read from ATIF as well
        assert atif_to_trace(trace_to_atif(trace)) == trace


def _strip_parked(trace: Trace) -> Trace:
    trace = trace.model_copy(deep=True)
    trace.provenance.extra.pop("atif", None)
    for message in trace.messages:
        message.extra.pop("atif", None)
    return trace


def test_edited_traces_write_their_edits():
    """Parked ATIF originals never override an edit; at most a stale one is dropped."""
    rng = random.Random(7)
    for _ in range(400):
        trace = atif_to_trace(_random_doc(rng))
        edit = rng.choice(["append", "delete", "usage", "cost", "system", "content", "ts", "tools"])
        if edit == "append":
            trace.messages.append(
                Message(role=rng.choice(["user", "assistant", "tool"]), content="+")
            )
        elif edit == "delete" and trace.messages:
            del trace.messages[rng.randrange(len(trace.messages))]
        elif edit == "usage":
            trace.usage = Usage(input_tokens=3)
        elif edit == "cost":
            trace.cost_usd = 9.5
        elif edit == "system":
            trace.system_prompt = rng.choice([None, "new system prompt"])
        elif edit == "content" and trace.messages:
            trace.messages[0].content = "edited"
        elif edit == "ts" and trace.messages:
            trace.messages[0].timestamp = None
        elif edit == "tools":
            trace.tools = [ToolSchema(name="only")]
        back = atif_to_trace(trace_to_atif(trace))
        assert _strip_parked(back) == _strip_parked(trace), edit


# ------------------------------------------------------------------------------------------
# validation


def _with(path: str, value):
    doc = _sample()
    target = doc
    parts = path.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is KeyError:
        del target[parts[-1]]
    else:
        target[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "pattern"),
    [
        ([1, 2], r"expected a JSON object.*got array"),
        ({"messages": []}, r"'steps' is missing"),
        (_with("steps", {"0": {}}), r"'steps' must be an array, got object"),
        (_with("session_id", KeyError), r"'session_id' is missing"),
        (_with("agent", "claude"), r"'agent' must be an object, got string"),
        (_with("agent.name", KeyError), r"at agent: 'name' is missing"),
        (_with("steps.1", "agent"), r"at steps\[1\]: a step must be an object, got string"),
        (_with("steps.0.source", "bot"), r"at steps\[0\] \(step_id 1\): 'source' must be one of"),
        (_with("steps.2.message", KeyError), r"at steps\[2\] \(step_id 3\): 'message' is missing"),
        (_with("steps.0.step_id", "1"), r"at steps\[0\].*'step_id' must be an integer, got string"),
        (
            _with("steps.1.tool_calls.0.arguments", "{}"),
            r"at steps\[1\] \(step_id 2\)\.tool_calls\[0\]: "
            r"'arguments' must be an object, got string",
        ),
        (
            _with("steps.1.observation", {"result": []}),
            r"at steps\[1\] \(step_id 2\)\.observation: 'results' is missing",
        ),
        (
            _with("steps.1.metrics.prompt_tokens", "100"),
            r"at steps\[1\] \(step_id 2\)\.metrics: 'prompt_tokens' must be an integer, got string",
        ),
        (
            _with("final_metrics.total_cost_usd", "cheap"),
            r"at final_metrics: 'total_cost_usd' must be a number, got string",
        ),
        (
            _with("agent.tool_definitions", [{"description": "nameless"}]),
            r"at agent.tool_definitions\[0\]: tool definition has no 'name'",
        ),
        (_with("extra", {"bashgym": 3}), r"at extra: 'bashgym' must be an object, got integer"),
    ],
)
def test_invalid_docs_raise_value_error_naming_the_problem(doc, pattern):
    with pytest.raises(ValueError, match=pattern):
        atif_to_trace(doc)


def test_load_atif_rejects_non_json(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="is not JSON"):
        load_atif(path)
