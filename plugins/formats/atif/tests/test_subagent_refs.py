"""`-k atif` writes subagents as ATIF's own subagent references, where Harbor's tools look.

Harbor's own models cannot be the check here: the `harbor` package needs Python >= 3.12 and
this workspace runs on 3.11 (`uv pip install --python 3.11 harbor==0.25.0`: "harbor==0.25.0
depends on Python>=3.12"). So the documents are checked with pydantic models written from
ATIF's reference (shared/reference/claude-code.md and Harbor's published
`SubagentTrajectoryRef` / `ObservationResult` fields: extra keys forbidden), with the format's
own validator (`load_atif`), and by reading them back through the atif source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from bashgym_formats_atif.convert import load_atif
from bashgym_formats_atif.sink import AtifSink, AtifSinkOptions
from bashgym_formats_atif.source import AtifOptions, AtifSource
from pydantic import BaseModel, ConfigDict

from bashgym.contracts import RunContext
from bashgym.records import Message, Provenance, ToolCall, Trace, trace_to_row
from bashgym.settings import Settings


class SubagentTrajectoryRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: str
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_call_id: str | None = None
    content: str | list[Any] | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None


def subagent(agent_id: str, tool_use_id: str | None) -> Trace:
    extra = {"agent_id": agent_id} | ({"tool_use_id": tool_use_id} if tool_use_id else {})
    return Trace(
        id=f"agent-{agent_id}",
        messages=[
            Message(role="user", content="Find every caller of check()."),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id=f"g-{agent_id}", name="Grep", arguments='{"p": "ch"}')],
            ),
            Message(role="tool", tool_call_id=f"g-{agent_id}", content="auth.py:3"),
            Message(role="assistant", content="One caller: auth.py line 3."),
        ],
        provenance=Provenance(
            source="claude-code", session_id="s1", parent_session_id="s1", extra=extra
        ),
    )


def parent(*subs: Trace) -> Trace:
    """A Claude Code session that started a subagent with its Task tool."""
    return Trace(
        id="s1",
        messages=[
            Message(role="user", content="Is check() used anywhere?"),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id="task_1", name="Task", arguments='{"prompt": "find"}')],
            ),
            Message(role="tool", tool_call_id="task_1", content="One caller: auth.py line 3."),
            Message(role="assistant", content="Yes, once, in auth.py."),
        ],
        provenance=Provenance(source="claude-code", session_id="s1"),
        subagents=list(subs),
    )


def write(tmp_path: Path, trace: Trace) -> tuple[RunContext, Path]:
    run = RunContext(run_dir=tmp_path / "run", settings=Settings())
    written = AtifSink().write(pd.DataFrame([trace_to_row(trace)]), AtifSinkOptions(), run, "")
    return run, written.paths[0]


def test_a_subagent_is_a_reference_in_its_spawning_result_and_a_file(tmp_path):
    run, path = write(tmp_path, parent(subagent("a1", "task_1")))
    doc = json.loads(path.read_text())
    assert "subagents" not in (doc.get("extra") or {}).get("bashgym", {})  # not hidden in extra
    results = [
        ObservationResult.model_validate(r)
        for step in doc["steps"]
        for r in (step.get("observation") or {}).get("results", [])
    ]
    (spawned,) = [r for r in results if r.source_call_id == "task_1"]
    (ref,) = spawned.subagent_trajectory_ref
    assert ref.trajectory_path == "s1.subagent-a1.json" and ref.session_id == "s1"
    sub_doc = json.loads((path.parent / ref.trajectory_path).read_text())
    assert sub_doc["session_id"] == ref.session_id  # the reference names that document
    manifest = json.loads((path.parent / "manifest.json").read_text())
    assert manifest == {"files": ["s1.json"], "subagent_files": [ref.trajectory_path]}
    assert "atif.inline_subagents" not in run.counts
    # ATIF's own reader follows the reference back to the same conversation
    back = load_atif(path)
    assert [m.content for m in back.subagents[0].messages] == [
        m.content for m in subagent("a1", "task_1").messages
    ]
    assert back.subagents[0].provenance.extra["tool_use_id"] == "task_1"


def test_the_atif_source_reads_the_folder_as_one_session_with_its_subagent(tmp_path):
    _, path = write(tmp_path, parent(subagent("a1", "task_1")))
    run = RunContext(run_dir=tmp_path / "read", settings=Settings())
    traces = list(AtifSource().open(AtifOptions(path=str(path.parent)), run))
    assert [t.id for t in traces] == ["s1"]  # the subagent file is no sample of its own
    assert [s.id for s in traces[0].subagents] == ["agent-a1"]
    assert run.counts.get("source.subagent_files") == 1


def test_a_subagent_with_no_known_spawning_call_stays_inline_and_is_counted(tmp_path):
    run, path = write(tmp_path, parent(subagent("a2", None)))
    doc = json.loads(path.read_text())
    assert len(doc["extra"]["bashgym"]["subagents"]) == 1
    assert run.counts["atif.inline_subagents"] == 1
    assert load_atif(path).subagents[0].id == "agent-a2"
