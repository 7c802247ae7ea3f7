"""Trace rows as Hub rows ready for TRL: `messages` and `tools` columns, not a Trace as JSON text.

Why nemo-jsonl's training lines: a Hub row and a JSONL line of the same trace must be the same
conversation (system prompt first, tool schemas always, calls answered, failed traces left out),
so both come from one conversion (`bashgym_sinks_nemo_jsonl.training_lines`).

Why explicit `datasets` features: each tool call's `arguments` and each tool's `parameters`
have their own keys. Arrow would merge them into one struct holding every key seen, and a chat
template would then render `{"command": "ls", "file_path": null}`. `datasets.Json` stores each
as its own JSON value (text in the Parquet file, an object again when `datasets` reads it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from bashgym_sinks_nemo_jsonl import Invalid, NemoJsonlOptions, training_lines

from bashgym.records import TRACE_COLUMN
from bashgym.text import plain
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.paths import shorten_row

NAME = "hf-hub"


def line_options(options: HfHubOptions) -> NemoJsonlOptions:
    return NemoJsonlOptions(
        format="tool-use",
        tool_arguments=options.tool_arguments,
        success_only=options.success_only,
        negatives=False,
    )


def trace_rows(
    rows: list[dict[str, Any]], options: HfHubOptions
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | str]]:
    """(source row, Hub row or the reason it is dropped), in order. A Hub row is the source
    row's flat summary columns (local paths cut to their name), then `messages` and `tools`
    (and `trace` if asked: the Trace as it was)."""
    convert = line_options(options)
    for row in rows:
        items = list(training_lines(row, "traces", convert))  # one: subagents are not asked for
        line = next((x for x in items if not isinstance(x, Invalid)), None)
        if line is None:
            yield row, str(items[0]) if items else "no training line"
            continue
        out = shorten_row({k: plain(v) for k, v in row.items() if k != TRACE_COLUMN})
        out["messages"], out["tools"] = line["messages"], line.get("tools", [])
        if options.include_trace:
            out[TRACE_COLUMN] = row[TRACE_COLUMN]
        yield row, out


def features(rows: list[dict[str, Any]], options: HfHubOptions) -> Any:
    """One `datasets.Features` for every shard of every split (a column null in one split
    must not get type null there and clash with the others on load)."""
    import datasets  # ~0.6 s (measured): only for trace rows written as Parquet

    arguments = datasets.Json() if options.tool_arguments == "object" else datasets.Value("string")
    string = datasets.Value("string")
    message = {
        "role": string,
        "content": string,
        "tool_calls": datasets.List(
            {"id": string, "type": string, "function": {"name": string, "arguments": arguments}}
        ),
        "tool_call_id": string,
        "name": string,
    }
    tool = {
        "type": string,
        "function": {"name": string, "description": string, "parameters": datasets.Json()},
    }
    flat = [{k: v for k, v in r.items() if k not in ("messages", "tools")} for r in rows]
    inferred = datasets.Features.from_arrow_schema(pa.Table.from_pylist(flat).schema)
    return datasets.Features(
        {**inferred, "messages": datasets.List(message), "tools": datasets.List(tool)}
    )
