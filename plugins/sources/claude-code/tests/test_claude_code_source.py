"""The source over directories: layouts, subagents attached (never top-level), filters, errors."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from bashgym_sources_claude_code.source import (
    NOT_A_DATE,
    ClaudeCodeInputError,
    ClaudeCodeOptions,
    ClaudeCodeSource,
    slugify,
)
from bashgym_testing.paths import options_with_path_gone
from pydantic import ValidationError

TODO = "-home-dev-todo-api"
NOTES = "-home-dev-notes-app"
PARENT = "c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f"
AGENT = "a7e3f09b2c41d586e"
ALL = {
    "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e",  # notes: ends on an API error
    "7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f",  # notes: parallel reads, one fails
    "e5f6a7b8-c9d0-4e1f-a2b3-c4d5e6f7a8b9",  # notes: compacted
    "4f7c2a10-8d3e-4b6a-9c1f-2e5d7a9b0c11",  # todo: health endpoint, 5 turns
    "9a1b3c5d-7e9f-4a2b-8c4d-6e8f0a2b4c6d",  # todo: failing test fixed, 4 turns
    PARENT,  # todo: spawns an Explore subagent
}
ALL_IDS = {i[0]: i for i in ALL}  # the first characters differ: pick sessions by them


@pytest.fixture
def projects(fixtures) -> Path:
    return fixtures / "projects"


def ids(traces) -> set[str]:
    return {t.id for t in traces}


def test_projects_dir_yields_each_session_once_with_its_subagent(read, projects, run):
    traces = read(path=str(projects))
    assert ids(traces) == ALL  # the subagent file is not a top-level trace
    parent = next(t for t in traces if t.id == PARENT)
    (child,) = parent.subagents
    assert child.id == f"{PARENT}:{AGENT}"
    assert child.provenance.parent_session_id == PARENT
    assert child.provenance.extra == {
        "is_sidechain": True,
        "agent_id": AGENT,
        "agent_type": "Explore",
        "description": "Find body validation",
        "tool_use_id": "toolu_01SubAgent000000001",
        "spawn_depth": 1,
    }
    # the meta's toolUseId is the parent's Agent call
    (call,) = [c for m in parent.messages for c in m.tool_calls]
    assert call.id == child.provenance.extra["tool_use_id"] and call.name == "Agent"
    assert [c.name for m in child.messages for c in m.tool_calls] == ["Grep", "Read"]
    assert run.counts["source.traces"] == 6 and run.counts["source.subagents"] == 1
    assert run.counts["source.bad_lines"] == 0 and run.notes == ()


def test_project_dir_single_file_and_claude_config_dir(read, projects, tmp_path, monkeypatch):
    assert ids(read(path=str(projects / NOTES))) == {i for i in ALL if i[0] in "07e"}
    (one,) = read(path=str(projects / TODO / f"{PARENT}.jsonl"))
    assert len(one.subagents) == 1  # a single session file still finds its subagents
    config = tmp_path / "claude-config"
    shutil.copytree(projects, config / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert ids(read()) == ALL  # default: $CLAUDE_CONFIG_DIR/projects
    assert ids(read(path=str(config))) == ALL  # the config dir itself works too
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    with pytest.raises(ClaudeCodeInputError, match=r"nobody/\.claude/projects' does not exist"):
        read()


def test_legacy_subagent_files_beside_the_session(read, projects, tmp_path, run):
    """Older Claude Code wrote `<slug>/agent-<id>.jsonl` next to the sessions."""
    folder = tmp_path / "p" / TODO
    folder.mkdir(parents=True)
    shutil.copy(projects / TODO / f"{PARENT}.jsonl", folder)
    agent = projects / TODO / PARENT / "subagents" / f"agent-{AGENT}.jsonl"
    shutil.copy(agent, folder / f"agent-{AGENT}.jsonl")
    orphan = folder / "agent-0000orphan.jsonl"
    orphan.write_text(agent.read_text().replace(PARENT, "11111111-no-such-session"))
    (trace,) = read(path=str(tmp_path / "p"))
    (child,) = trace.subagents
    assert child.provenance.parent_session_id == PARENT
    # no meta file: the spawning call is found by the prompt it gave the subagent
    assert child.provenance.extra["tool_use_id"] == "toolu_01SubAgent000000001"
    assert run.dropped == {"claude-code: subagent without its session": 1}  # the orphan only
    # with subagents off they are still not top-level traces
    (alone,) = read(path=str(tmp_path / "p"), subagents=False)
    assert alone.subagents == []


def test_orphan_subagents_are_counted_as_dropped(read, projects, tmp_path, run):
    folder = tmp_path / "p" / TODO
    folder.mkdir(parents=True)
    shutil.copy(projects / TODO / "4f7c2a10-8d3e-4b6a-9c1f-2e5d7a9b0c11.jsonl", folder)
    agent = projects / TODO / PARENT / "subagents" / f"agent-{AGENT}.jsonl"
    shutil.copy(agent, folder / f"agent-{AGENT}.jsonl")
    assert ids(read(path=str(tmp_path / "p"))) == {"4f7c2a10-8d3e-4b6a-9c1f-2e5d7a9b0c11"}
    assert run.dropped["claude-code: subagent without its session"] == 1


def test_nested_subagent_goes_under_the_subagent_that_spawned_it(read, projects, tmp_path):
    root = tmp_path / "p"
    shutil.copytree(projects / TODO, root / TODO)
    sub = root / TODO / PARENT / "subagents"
    lines = (sub / f"agent-{AGENT}.jsonl").read_text().splitlines()
    # a grandchild (its prompt and its answer) spawned by the child's Grep call
    grand = [line.replace(AGENT, "b0b0b0b0b0b0b0b0b") for line in (lines[0], lines[-1])]
    (sub / "agent-b0b0b0b0b0b0b0b0b.jsonl").write_text("\n".join(grand) + "\n")
    (sub / "agent-b0b0b0b0b0b0b0b0b.meta.json").write_text(
        json.dumps(
            {"agentType": "Explore", "toolUseId": "toolu_01SubGrep0000000001", "spawnDepth": 2}
        )
    )
    parent = next(t for t in read(path=str(root)) if t.id == PARENT)
    (child,) = parent.subagents
    (grandchild,) = child.subagents
    assert grandchild.provenance.extra["spawn_depth"] == 2


def test_subagents_off(read, projects):
    parent = next(t for t in read(path=str(projects), subagents=False) if t.id == PARENT)
    assert parent.subagents == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"project": "todo-api"}, {i for i in ALL if i[0] in "49c"}),
        ({"project": "/home/dev/notes.app"}, {i for i in ALL if i[0] in "07e"}),
        ({"project": "*/notes.*"}, {i for i in ALL if i[0] in "07e"}),
        ({"project": "/home/dev/notes-app"}, set()),  # the slug matches, the cwd does not
        ({"since": "2026-03-04"}, {i for i in ALL if i[0] in "07e"}),
        ({"until": "2026-03-03"}, {i for i in ALL if i[0] in "49c"}),  # inclusive date
        ({"until": "2026-03-03T00:00:00Z"}, {i for i in ALL if i[0] in "49c"} - {PARENT}),
        (
            {"since": "2026-03-02T12:00:00", "until": "2026-03-04"},
            {PARENT, ALL_IDS["e"], ALL_IDS["9"]},
        ),
        ({"min_turns": 4}, {i for i in ALL if i[0] in "e49"}),
        ({"max_turns": 2}, {i for i in ALL if i[0] in "07c"}),
        ({"min_turns": 3, "max_turns": 4}, {i for i in ALL if i[0] in "e9"}),
        ({"success_only": True}, ALL - {"0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"}),
        ({"limit": 2}, {i for i in ALL if i[0] in "07"}),
    ],
)
def test_filters(read, projects, run, options, expected):
    assert ids(read(path=str(projects), **options)) == expected
    filtered = sum(v for k, v in run.counts.items() if k.startswith("source.filtered."))
    if "limit" not in options:
        assert filtered == len(ALL) - len(expected)


def test_since_skips_old_files_without_opening_them(read, projects, tmp_path, run):
    root = tmp_path / "p"
    shutil.copytree(projects, root)
    old = root / NOTES / "7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f.jsonl"
    old.write_bytes(b"\x00 junk that would be a bad line if it were read\n")
    os.utime(old, (1_000_000_000, 1_000_000_000))  # 2001
    read(path=str(root), since="2026-03-01")
    assert run.counts["source.filtered.since"] >= 1
    assert run.counts["source.bad_lines"] == 0


def test_bad_paths_and_options(read, tmp_path, run):
    with pytest.raises(ValueError, match="path\n  does not exist"):
        ClaudeCodeOptions(path=str(tmp_path / "missing"))  # before a run folder exists
    options = options_with_path_gone(ClaudeCodeOptions, tmp_path / "gone")
    with pytest.raises(ClaudeCodeInputError, match="gone' does not exist"):
        ClaudeCodeSource().open(options, run)
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(ClaudeCodeInputError, match="no session files"):
        read(path=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="min_turns is greater than max_turns"):
        ClaudeCodeOptions(min_turns=3, max_turns=2)
    with pytest.raises(ValueError, match="Extra inputs"):
        ClaudeCodeOptions(projects="x")


@pytest.mark.parametrize("field", ["since", "until"])
def test_a_date_that_cannot_be_read_is_one_message_with_the_formats(field):
    """pydantic said it twice (`since.date: ...; since.datetime: ...`) and showed no format."""
    for given in ("yesterday", "2026-13-01", True):
        with pytest.raises(ValidationError) as raised:
            ClaudeCodeOptions(**{field: given})
        (error,) = raised.value.errors()
        assert error["loc"] == (field,)
        assert error["msg"] == NOT_A_DATE
        assert "YYYY-MM-DD" in NOT_A_DATE and "2026-11-28T09:00" in NOT_A_DATE


@pytest.mark.parametrize(
    ("given", "read_as"),
    [
        ("2026-03-03", date(2026, 3, 3)),
        (" 2026-03-03 ", date(2026, 3, 3)),
        ("2026-03-03T09:00", datetime(2026, 3, 3, 9, 0)),
        ("2026-03-03 09:00", datetime(2026, 3, 3, 9, 0)),
        ("2026-03-03T00:00:00Z", datetime(2026, 3, 3, tzinfo=UTC)),
        ("20260303", datetime(2026, 3, 3)),
        ("1700000000", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),  # Unix time: pydantic's
        (1700000000, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        (None, None),
    ],
)
def test_every_date_form_read_before_is_still_read(given, read_as):
    assert ClaudeCodeOptions(since=given).since == read_as


def test_slugify_matches_claude_codes_dir_names():
    assert slugify("/home/dev/notes.app") == NOTES
    assert slugify("/home/dev/todo-api") == TODO


def test_source_is_registered_and_streams(projects, run):
    import bashgym_sources_claude_code as plugin

    registered = {}
    plugin.register_sources(lambda name, obj: registered.update({name: obj}))
    assert isinstance(registered["claude-code"], ClaudeCodeSource)
    assert ClaudeCodeSource.output_format == "traces"
    out = ClaudeCodeSource().open(ClaudeCodeOptions(path=str(projects)), run)
    assert isinstance(out, Iterator)  # a generator: one session in memory at a time
    assert next(iter(out)).provenance.source == "claude-code"


def test_the_traces_own_tokens_are_counted_once_each(read, projects, run):
    """run.json says what the sessions spent (a sink may drop a usage-only session later);
    a subagent's tokens count once, beside its parent's."""
    traces = read(path=str(projects))

    def total(trace, kind):
        return getattr(trace.usage, f"{kind}_tokens") + sum(total(s, kind) for s in trace.subagents)

    for kind in ("input", "output", "cache_creation", "cache_read"):
        assert run.counts.get(f"source.tokens.{kind}", 0) == sum(total(t, kind) for t in traces)
    assert run.counts["source.tokens.output"] > 0
