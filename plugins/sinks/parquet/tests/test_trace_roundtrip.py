"""Trace rows survive the parquet sink: `trace_from_row` on what pyarrow reads back equals the
original Trace, nested subagents, tool calls, unicode, timestamps and free-form `extra` included."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pyarrow.parquet as pq
from bashgym_sinks_parquet.sink import ParquetOptions, ParquetSink

from bashgym.contracts import RunContext
from bashgym.records import (
    Message,
    Outcome,
    Provenance,
    Timing,
    ToolCall,
    ToolSchema,
    Trace,
    Usage,
    trace_from_row,
    trace_to_row,
)
from bashgym.settings import Settings

T0 = datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)


def rich_trace(i: int) -> Trace:
    sub = Trace(
        id=f"sub-{i}",
        system_prompt="You are a subagent.",
        messages=[Message(role="user", content="grep it"), Message(role="assistant", content="ok")],
        provenance=Provenance(parent_session_id=f"s{i}", agent="claude-code"),
    )
    return Trace(
        id=f"t-{i}",
        system_prompt="You are Claude Code. ✓ émoji 🚀",
        messages=[
            Message(role="user", content=f'Fix bug {i}\nwith\ttabs and "quotes"', timestamp=T0),
            Message(
                role="assistant",
                content="",
                reasoning="think… then act",
                tool_calls=[
                    ToolCall(id="c1", name="Bash", arguments='{"command": "ls -la"}'),
                    ToolCall(id="c2", name="Read", arguments="not json at all"),
                ],
                extra={"message_id": "msg_1", "stop_reason": "tool_use"},
            ),
            Message(role="tool", tool_call_id="c1", name="Bash", content="a\nb", is_error=False),
            Message(role="tool", tool_call_id="c2", content="ENOENT", is_error=True),
            Message(role="assistant", content="Done — 100%.", timestamp=T0),
        ],
        tools=[
            ToolSchema(
                name="Bash",
                description="Run a command",
                parameters={
                    "type": "object",
                    "properties": {
                        "command": {"type": "string"},
                        "timeout": {"type": ["integer", "null"]},
                    },
                },
            )
        ],
        usage=Usage(
            input_tokens=1000 + i, output_tokens=50, cache_creation_tokens=7, cache_read_tokens=9
        ),
        cost_usd=0.0123 if i % 2 else None,
        timing=Timing(started_at=T0, ended_at=T0, duration_s=1.5),
        outcome=Outcome(
            success=bool(i % 2), error_kind=None if i % 2 else "max_turns", num_turns=4
        ),
        provenance=Provenance(
            source="claude-code",
            source_file="/home/u/.claude/projects/x/s.jsonl",
            line=12,
            session_id=f"s{i}",
            model="claude-sonnet-4",
            cwd="/repo",
            git_branch="main",
            git_commit="abc123",
            extra={"nested": {"list": [1, 2.5, None, {"k": "v"}], "flag": True}},
        ),
        subagents=[sub] if i % 2 else [],
        extra={"": "empty key", "mixed": [1, "two", [3]]},
    )


def test_trace_rows_round_trip_through_parquet(tmp_path):
    traces = [rich_trace(i) for i in range(4)]
    frame = pd.DataFrame([trace_to_row(t) for t in traces])
    run = RunContext(run_dir=tmp_path, settings=Settings())
    (path,) = ParquetSink().write(frame, ParquetOptions(), run, "traces").paths
    rows = pq.read_table(path).to_pylist()
    assert [trace_from_row(row) for row in rows] == traces
    # The flat columns stay queryable next to the lossless JSON.
    assert [r["trace_id"] for r in rows] == ["t-0", "t-1", "t-2", "t-3"]
    assert [r["num_subagents"] for r in rows] == [0, 1, 0, 1]
    assert [r["cost_usd"] for r in rows] == [None, 0.0123, None, 0.0123]


def test_trace_rows_round_trip_through_shards(tmp_path):
    traces = [rich_trace(i) for i in range(5)]
    frame = pd.DataFrame([trace_to_row(t) for t in traces])
    run = RunContext(run_dir=tmp_path, settings=Settings())
    ParquetSink().write(frame, ParquetOptions(shard_rows=2), run, "traces")
    back = pq.read_table(tmp_path / "parquet").to_pandas()
    assert [trace_from_row(row) for _, row in back.iterrows()] == traces
