"""The codex source on realistic rollouts: current and legacy formats, parallel calls, custom
tools, usage, damaged lines, folder discovery and the CLI end to end.

Fixtures under `fixtures/sessions/` mirror Codex's own `sessions/YYYY/MM/DD/` layout:
- 2025/10/29 (cli 0.46): shell + apply_patch (custom tool) calls, reasoning, token counts.
- 2025/11/20 03-08 (cli 0.63): base instructions, developer message, two parallel exec_command
  calls (one fails), a web_search_call (unknown here), a compaction, a cut-off line mid-file
  and a truncated last line.
- 2025/05/12 (legacy): no `{timestamp, type, payload}` wrapper, `record_type` markers,
  a local_shell_call.
- 2025/11/20 04-00: metadata only (a session opened and closed): dropped as empty.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bashgym_formats_atif import atif_to_trace, trace_to_atif
from bashgym_sources_codex.rollout import read_rollout
from bashgym_sources_codex.source import CodexInputError, CodexOptions, CodexSource
from bashgym_testing.paths import options_with_path_gone

from bashgym.contracts import RunContext
from bashgym.records import Trace, trace_from_row
from bashgym.settings import Settings

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
SHELL = next(SESSIONS.glob("2025/10/29/rollout-*.jsonl"))
EXEC = next(SESSIONS.glob("2025/11/20/rollout-*T03-08-12-*.jsonl"))
LEGACY = next(SESSIONS.glob("2025/05/12/rollout-*.jsonl"))


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def traces(run: RunContext, **options) -> list[Trace]:
    return list(CodexSource().open(CodexOptions(**options), run))


def test_rollout_with_shell_patch_reasoning_and_usage():
    rollout = read_rollout(SHELL)
    trace = rollout.trace
    assert rollout.bad_lines == [] and not rollout.skipped
    assert trace.id == "0199a8f2-3c4d-7e21-9b0a-5f6e7d8c9b01"
    assert [m.role for m in trace.messages] == [
        "user", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert trace.messages[0].content.startswith("<environment_context>")
    assert trace.messages[1].content.startswith('parse("") raises IndexError')
    first_call = trace.messages[2]
    assert first_call.reasoning == "**Inspecting the parser entry point**"
    assert first_call.tool_calls[0].name == "shell"
    assert first_call.tool_calls[0].arguments_dict()["command"][-1].startswith("sed -n")
    patch = trace.messages[4].tool_calls[0]
    assert patch.name == "apply_patch"
    assert patch.arguments_dict()["input"].startswith("*** Begin Patch\n*** Update File:")
    assert trace.messages[4].extra["codex_custom_calls"] == [patch.id]
    assert trace.messages[4].reasoning.startswith("**Guarding empty input**")
    results = [m for m in trace.messages if m.role == "tool"]
    assert [r.name for r in results] == ["shell", "apply_patch", "shell"]
    assert not any(r.is_error for r in results)
    assert "4 passed" in results[-1].content
    assert trace.messages[-1].content.startswith('Fixed: `parse("")`')
    assert [t.name for t in trace.tools] == ["shell", "apply_patch"]
    # Last cumulative token_count: 16842 input of which 12288 cached, 702 output.
    assert trace.usage.input_tokens == 16842 - 12288
    assert trace.usage.cache_read_tokens == 12288
    assert trace.usage.output_tokens == 702
    assert trace.extra["codex_token_usage"]["reasoning_output_tokens"] == 256
    prov = trace.provenance
    assert (prov.source, prov.agent, prov.agent_version) == ("codex", "codex", "0.46.0")
    assert prov.session_id == trace.id and prov.source_file == str(SHELL)
    assert prov.model == "gpt-5-codex"
    assert prov.cwd == "/home/dev/projects/tinyjson"
    assert prov.git_branch == "fix/parse-empty"
    assert prov.git_commit == "4f1c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
    assert prov.extra["repository_url"] == "git@github.com:dev/tinyjson.git"
    assert prov.extra["approval_policy"] == "on-request"
    assert prov.extra["reasoning_effort"] == "medium"
    assert trace.timing.started_at.isoformat() == "2025-10-29T09:14:02.498000+00:00"
    assert trace.timing.duration_s == pytest.approx(18.203)
    assert (trace.outcome.success, trace.outcome.num_turns) == (True, 1)
    assert trace.system_prompt is None


def test_parallel_calls_developer_message_compaction_and_damaged_lines(run):
    rollout = read_rollout(EXEC)
    trace = rollout.trace
    assert trace.system_prompt.startswith("You are Codex, based on GPT-5.")
    # the leading developer message joins the system prompt (it reaches the SFT line there)
    assert "<permissions instructions>" in trace.system_prompt
    assert trace.extra["left_out"] == {"into_system_prompt": {"system": 1}}
    assert trace.messages[0].content.startswith("# AGENTS.md instructions")
    assert trace.messages[0].extra == {"codex_context": "user_instructions"}
    calls = trace.messages[3]
    assert calls.role == "assistant" and calls.content == ""
    assert calls.tool_calls[0].arguments_dict()["cmd"] == "make test"
    assert len(calls.tool_calls) == 2  # parallel calls stay on one assistant turn
    failed, found = trace.messages[4], trace.messages[5]
    assert failed.tool_call_id == calls.tool_calls[0].id and failed.is_error
    assert "ZeroDivisionError" in failed.content
    assert found.tool_call_id == calls.tool_calls[1].id and not found.is_error
    assert trace.messages[-1].role == "assistant"
    assert "ZeroDivisionError" in trace.messages[-1].content
    assert trace.extra["codex_compacted"][0]["message"].startswith("The user asked why")
    assert trace.provenance.model == "gpt-5.1-codex"
    assert trace.usage.input_tokens == 24210 - 19840 and trace.usage.output_tokens == 1288
    assert trace.outcome.success is None  # the task_complete line was cut off
    assert rollout.skipped == {"web_search_call": 1}
    assert [line.split(": ", 1)[0] for line in rollout.bad_lines] == [f"{EXEC}:14", f"{EXEC}:21"]
    assert rollout.bad_lines[-1].endswith("truncated last line")
    assert "invalid JSON" in rollout.bad_lines[0]
    # Through the source, the same damage is counted in run.json and noted line by line.
    [trace_via_source] = traces(run, path=str(EXEC))
    assert trace_via_source == trace
    assert run.counts["source.bad_lines"] == 2
    assert run.counts["source.skipped_items.web_search_call"] == 1
    assert list(run.notes) == rollout.bad_lines


def test_legacy_rollout_without_wrapper():
    rollout = read_rollout(LEGACY)
    trace = rollout.trace
    assert rollout.bad_lines == [] and not rollout.skipped
    assert trace.id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    call = trace.messages[1].tool_calls[0]
    assert call.name == "local_shell"
    assert call.arguments_dict()["command"] == ["bash", "-lc", "find . -name '*.py' | xargs wc -l"]
    assert trace.messages[1].reasoning.startswith("**Listing Python files**")
    assert trace.messages[2].tool_call_id == call.id and "52 total" in trace.messages[2].content
    assert trace.extra["codex_user_instructions"] == "Always use type hints."
    assert trace.provenance.git_branch == "main"
    assert trace.timing.started_at is not None and trace.timing.ended_at is None


@pytest.mark.parametrize("path", [SHELL, EXEC, LEGACY])
def test_traces_are_well_formed_and_survive_atif(path):
    trace = read_rollout(path).trace
    seen: set[str] = set()
    for message in trace.messages:
        seen |= {call.id for call in message.tool_calls}
        if message.role == "tool":
            assert message.tool_call_id in seen  # every result answers an earlier call
    assert atif_to_trace(trace_to_atif(trace)) == trace


def test_default_codex_home_folder_order_and_empty_session(run, tmp_path, monkeypatch):
    home = tmp_path / "codex-home"
    shutil.copytree(SESSIONS, home / "sessions")
    (home / "history.jsonl").write_text('{"session_id": "x", "ts": 1, "text": "hi"}\n')
    monkeypatch.setenv("CODEX_HOME", str(home))
    found = traces(run)
    assert [t.provenance.agent_version for t in found] == [None, "0.46.0", "0.63.0"]  # by date
    assert run.dropped == {"codex: rollout has no user or assistant message": 1}
    assert run.counts["source.files"] == 4
    kept_empty = traces(RunContext(run_dir=tmp_path, settings=Settings()), skip_empty=False)
    assert len(kept_empty) == 4


def test_glob_single_file_and_no_reasoning(run):
    globbed = traces(run, path=str(SESSIONS / "**" / "rollout-2025-11-*.jsonl"))
    assert len(globbed) == 1  # the other November file is empty and dropped
    [plain] = traces(run, path=str(SHELL), include_reasoning=False)
    assert all(m.reasoning is None for m in plain.messages)


def test_truncation_anywhere_never_crashes(tmp_path):
    data = SHELL.read_bytes()
    for cut in range(1, len(data), 211):
        partial = tmp_path / "rollout-partial.jsonl"
        partial.write_bytes(data[:cut])
        rollout = read_rollout(partial)
        assert len(rollout.bad_lines) <= 1
        if not data[:cut].endswith(b"\n") and rollout.bad_lines:
            assert rollout.bad_lines[0].endswith("truncated last line")


def test_garbage_is_counted_not_fatal(run, tmp_path):
    junk = tmp_path / "rollout-junk.jsonl"
    junk.write_text(
        '[1, 2]\nhello\n{"timestamp": "x", "type": "response_item", "payload": 3}\n{}\n'
    )
    assert traces(run, path=str(junk)) == []
    assert run.counts["source.bad_lines"] == 4
    assert run.notes[0] == f"{junk}:1: expected a JSON object, got list"
    assert run.dropped["codex: rollout has no user or assistant message"] == 1


def test_bad_paths_are_input_errors(run, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="path\n  does not exist"):
        CodexOptions(path=str(tmp_path / "missing"))  # before a run folder exists
    with pytest.raises(ValueError, match="nothing matches this glob"):
        CodexOptions(path=str(tmp_path / "missing" / "rollout-*.jsonl"))
    options = options_with_path_gone(CodexOptions, tmp_path / "gone")
    with pytest.raises(CodexInputError, match=r"no rollout files in .*gone"):
        list(CodexSource().open(options, run))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "nothing"))
    with pytest.raises(CodexInputError, match=r"the default; set source\.path or CODEX_HOME"):
        traces(run)
    with pytest.raises(ValueError, match="must name a file"):
        CodexOptions(path="  ")


def test_cli_run_writes_trace_rows(bashgym_cli, bashgym_env):
    out = bashgym_env.workdir / "out"
    result = bashgym_cli(
        "run", "--source", "codex", "--set", f"source.path={SESSIONS}",
        "--sink", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table["source"]) == ["codex"] * 3
    back = [trace_from_row(row) for row in table.to_dict(orient="records")]
    assert back[1] == read_rollout(SHELL).trace
    assert list(table["num_tool_calls"]) == [1, 3, 2]
    assert list(table["input_tokens"]) == [0, 16842 - 12288, 24210 - 19840]
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["source.bad_lines"] == 2 and counts["kept"] == 3
    assert counts["dropped"] == {"codex: rollout has no user or assistant message": 1}
