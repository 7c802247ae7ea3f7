"""Shapes Harbor writes: observations without `source_call_id` (terminus-2), token metrics of its
Claude Code converter, `subagent_trajectory_ref` files, image content parts.

fixtures/harbor holds Harbor's own golden terminus-2 trajectories (tests/golden/terminus_2,
Apache-2.0), renamed to the file names their references use; their token-id and logprob arrays
are cut to 8 entries to keep them small.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
from bashgym_formats_atif.convert import atif_to_trace, load_atif, trace_to_atif
from bashgym_formats_atif.sink import AtifSink, AtifSinkOptions
from bashgym_formats_atif.source import AtifOptions, AtifSource

from bashgym.contracts import RunContext
from bashgym.records import trace_to_row
from bashgym.settings import Settings

HARBOR = Path(__file__).resolve().parent / "fixtures" / "harbor"


def _run(tmp_path: Path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def _answered(trace) -> bool:
    calls = [c.id for m in trace.messages for c in m.tool_calls]
    results = [m.tool_call_id for m in trace.messages if m.role == "tool"]
    return sorted(calls) == sorted(results)


def test_results_without_source_call_id_pair_with_their_step_calls_by_position():
    doc = json.loads((HARBOR / "timeout" / "trajectory.json").read_text())
    assert all(
        "source_call_id" not in r for s in doc["steps"] for r in (s.get("observation") or {})
        .get("results", [])
    )  # fmt: skip
    trace = atif_to_trace(doc)
    assert _answered(trace)  # before: every result had no id and the sink dropped the file
    pairs = [
        (m.tool_calls[0].id, trace.messages[i + 1].tool_call_id)
        for i, m in enumerate(trace.messages)
        if m.tool_calls
    ]
    assert pairs == [("call_0_1", "call_0_1"), ("call_1_1", "call_1_1"), ("call_2_1", "call_2_1")]
    assert trace_to_atif(trace) == doc  # written back without ids, as read


def test_an_unpaired_result_written_by_bashgym_stays_unpaired():
    doc = json.loads((HARBOR / "timeout" / "trajectory.json").read_text())
    trace = atif_to_trace(doc)
    edited = trace.model_copy(deep=True)
    result = next(m for m in edited.messages if m.role == "tool")
    result.tool_call_id = None
    result.extra.clear()
    back = atif_to_trace(trace_to_atif(edited))
    assert next(m for m in back.messages if m.role == "tool").tool_call_id is None
    assert back == edited


def test_prompt_tokens_of_harbors_claude_code_converter():
    """Harbor's converter: prompt_tokens = input + cache reads (cache writes left out), with
    Anthropic's usage copied into extra. Before, input = prompt - cached - creation went
    negative and was clamped to 0."""
    usage = {"input_tokens": 4, "cache_creation_input_tokens": 9000,
             "cache_read_input_tokens": 12000, "output_tokens": 300}  # fmt: skip
    metrics = {
        "prompt_tokens": usage["input_tokens"] + usage["cache_read_input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "cached_tokens": usage["cache_read_input_tokens"],
        "extra": {k: v for k, v in usage.items() if k not in ("input_tokens", "output_tokens")},
    }
    doc = {
        "schema_version": "ATIF-v1.2",
        "session_id": "cc-1",
        "agent": {"name": "claude-code", "version": "2.0.31", "model_name": "claude-sonnet-4-5"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "fix it"},
            {"step_id": 2, "source": "agent", "message": "done", "metrics": metrics},
        ],
        "final_metrics": {
            "total_prompt_tokens": 12004,
            "total_completion_tokens": 300,
            "total_cached_tokens": 12000,
            "total_steps": 2,
            "extra": {
                "total_cache_creation_input_tokens": 9000,
                "total_cache_read_input_tokens": 12000,
            },
        },
    }
    trace = atif_to_trace(doc)
    assert trace.usage.input_tokens == 4
    assert trace.usage.cache_creation_tokens == 9000
    assert trace.usage.cache_read_tokens == 12000
    assert trace_to_atif(trace) == doc
    # the spec's own meaning (cache writes inside prompt_tokens) still subtracts them
    spec = copy.deepcopy(doc)
    del spec["final_metrics"]["extra"]["total_cache_read_input_tokens"]
    del spec["steps"][1]["metrics"]["extra"]["cache_read_input_tokens"]
    spec["final_metrics"]["total_prompt_tokens"] = 21004
    assert atif_to_trace(spec).usage.input_tokens == 4


def test_subagent_trajectory_refs_become_nested_traces(tmp_path):
    run = _run(tmp_path)
    folder = HARBOR / "summarization"
    (trace,) = AtifSource().open(AtifOptions(path=str(folder)), run)
    assert run.counts["source.files"] == 1
    assert run.counts["source.subagent_files"] == 3  # not samples of their own
    assert [s.provenance.session_id for s in trace.subagents] == [
        "test-session-context-summarization-summarization-1-summary",
        "test-session-context-summarization-summarization-1-questions",
        "test-session-context-summarization-summarization-1-answers",
    ]
    assert {s.provenance.parent_session_id for s in trace.subagents} == {trace.id}
    # the document round-trips unchanged: the references stay, nothing is inlined
    assert trace_to_atif(trace) == json.loads((folder / "trajectory.json").read_text())
    # the sink writes each subagent where its reference points, and it reads back the same
    out = tmp_path / "out"
    written = AtifSink().write(
        pd.DataFrame([trace_to_row(trace)]), AtifSinkOptions(path=str(out)), run, "traces"
    )
    assert written.rows == 1
    names = sorted(p.name for p in out.iterdir())
    assert "trajectory.summarization-1-answers.json" in names
    (again,) = AtifSource().open(AtifOptions(path=str(out), pattern="*.json"), _run(tmp_path))
    assert [s.messages for s in again.subagents] == [s.messages for s in trace.subagents]


def test_a_missing_referenced_file_is_counted(tmp_path):
    doc = json.loads((HARBOR / "summarization" / "trajectory.json").read_text())
    (tmp_path / "trajectory.json").write_text(json.dumps(doc))
    run = _run(tmp_path)
    (trace,) = AtifSource().open(AtifOptions(path=str(tmp_path)), run)
    assert trace.subagents == []
    assert run.counts["source.unresolved_subagents"] == 3
    assert any("trajectory.summarization-1-summary.json not found" in n for n in run.notes)


def test_image_content_parts_keep_a_marker():
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "img",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": [
                {"type": "text", "text": "What is in this screenshot?"},
                {"type": "image", "source": {"media_type": "image/png", "path": "images/s.png"}},
            ]},
            {"step_id": 2, "source": "agent", "message": "A login form."},
        ],
    }  # fmt: skip
    trace = atif_to_trace(doc)
    assert trace.messages[0].content == "What is in this screenshot?\n[image]"
    assert trace_to_atif(trace) == doc


def test_load_atif_resolves_references_beside_the_file():
    trace = load_atif(HARBOR / "summarization" / "trajectory.json")
    assert len(trace.subagents) == 3
    assert load_atif(HARBOR / "summarization" / "trajectory.json", subagents=False).subagents == []


def test_a_reference_that_leaves_the_folder_is_not_read(tmp_path):
    """`trajectory_path` is data: `../outside.json` is counted, never read as a subagent."""
    doc = json.loads((HARBOR / "summarization" / "trajectory.json").read_text())
    folder = tmp_path / "in"
    folder.mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text((HARBOR / "summarization" / "trajectory.json").read_text())
    for ref in _refs(doc):
        ref["trajectory_path"] = "../outside.json"
    (folder / "trajectory.json").write_text(json.dumps(doc))
    run = _run(tmp_path)
    (trace,) = AtifSource().open(AtifOptions(path=str(folder)), run)
    assert trace.subagents == []
    assert any("leaves the folder" in n for n in run.notes)


def _refs(doc: dict) -> list[dict]:
    return [
        ref
        for step in doc["steps"]
        for result in (step.get("observation") or {}).get("results") or []
        for ref in result.get("subagent_trajectory_ref") or []
    ]


def test_session_ids_from_data_stay_in_the_folder(tmp_path):
    """A session id is data: `manifest` cannot overwrite the manifest, `../x` cannot leave the
    folder, and a 300-character id is a short name, not an OSError."""
    base = json.loads((Path(__file__).parent / "fixtures" / "atif_example.json").read_text())
    ids = ["manifest", "../../escape", "x" * 300, "/abs/path"]
    rows = []
    for ident in ids:
        doc = copy.deepcopy(base)
        doc["session_id"] = ident
        rows.append(trace_to_row(atif_to_trace(doc)))
    out = tmp_path / "out"
    run = _run(tmp_path)
    written = AtifSink().write(pd.DataFrame(rows), AtifSinkOptions(path=str(out)), run, "traces")
    assert written.rows == 4
    assert all(p.parent == out for p in written.paths)
    listing = json.loads((out / "manifest.json").read_text())
    assert len(listing["files"]) == 4 and "manifest.json" not in listing["files"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*listing["files"], "manifest.json"])
    read = [json.loads((out / name).read_text())["session_id"] for name in listing["files"]]
    assert sorted(read) == sorted(ids)
