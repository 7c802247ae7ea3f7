"""Which system prompt a line gets, through a real `bashgym run` and the real `datasets` loader.

The reported case: `-s files` Q&A rows ("What is 2+2?") were written under the coding-agent
prompt ("... finish with a short summary of what you changed."), so a model trained on them
learns to frame every answer as an agent's report. An agent's trace keeps that prompt; a user's
`sink.default_system_prompt` applies to every line that carries none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from bashgym_sinks_nemo_jsonl.options import DEFAULT_SYSTEM_PROMPT

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "transcripts"


def run(cli: Any, out: Path, *args: str) -> list[dict[str, Any]]:
    """Every train and val line the run wrote, as `datasets` loads them (the manifest's files)."""
    result = cli("run", *args, "-k", "nemo-jsonl", "--out", out)
    assert result.exit_code == 0, result.output
    folder = out / "nemo-jsonl"
    manifest = json.loads((folder / "manifest.json").read_text())
    files = {s: str(folder / f) for s, f in manifest["files"].items() if f}
    loaded = datasets.load_dataset("json", data_files=files, cache_dir=str(out / "hf-cache"))
    return [row for split in loaded.values() for row in split]


def first(row: dict[str, Any]) -> tuple[str, str]:
    """The first message's role and text (Arrow gives every message every key, null if unset)."""
    return row["messages"][0]["role"], row["messages"][0]["content"]


@pytest.fixture
def qa_csv(bashgym_env: Any) -> Path:
    path = bashgym_env.workdir / "qa.csv"
    path.write_text("prompt,response\nWhat is 2+2?,4\nCapital of France?,Paris\n")
    return path


def test_plain_qa_rows_get_no_coding_agent_prompt(bashgym_cli, bashgym_env, qa_csv):
    rows = run(bashgym_cli, bashgym_env.workdir / "qa", "-s", "files", "--set",
               f"source.path={qa_csv}")  # fmt: skip
    assert sorted(r["messages"][0]["content"] for r in rows) == [
        "Capital of France?",
        "What is 2+2?",
    ]
    for row in rows:
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"]


def test_agent_traces_keep_the_coding_agent_prompt(bashgym_cli, bashgym_env):
    rows = run(bashgym_cli, bashgym_env.workdir / "cc", "-s", "claude-code", "--set",
               f"source.path={EXAMPLES}")  # fmt: skip
    assert len(rows) == 5  # the six example sessions, one ending on an API error
    for row in rows:
        assert first(row) == ("system", DEFAULT_SYSTEM_PROMPT)
        assert row["tools"]


def test_a_users_system_prompt_applies_to_every_line(bashgym_cli, bashgym_env, qa_csv):
    work = bashgym_env.workdir
    mine = "Answer in one word."
    for name, args in {
        "qa": ("-s", "files", "--set", f"source.path={qa_csv}"),
        "cc": ("-s", "claude-code", "--set", f"source.path={EXAMPLES}"),
    }.items():
        rows = run(bashgym_cli, work / name, *args, "--set", f"sink.default_system_prompt={mine}")
        assert rows and all(first(r) == ("system", mine) for r in rows)
    # "" is the user's choice of none, for an agent's line too
    rows = run(bashgym_cli, work / "none", "-s", "claude-code", "--set",
               f"source.path={EXAMPLES}", "--set", "sink.default_system_prompt=")  # fmt: skip
    assert rows and all(r["messages"][0]["role"] == "user" for r in rows)


def test_chat_and_dpo_rows_get_the_agent_prompt_only_when_they_use_tools(bashgym_cli, bashgym_env):
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    chats = [
        {"id": "plain", "messages": [{"role": "system", "content": " "},
                                     {"role": "user", "content": "Hi"},
                                     {"role": "assistant", "content": "Hello"}]},
        {"id": "agent", "messages": [{"role": "user", "content": "List files"},
                                     {"role": "assistant", "content": "", "tool_calls": [call]},
                                     {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
                                     {"role": "assistant", "content": "a.py"}]},
    ]  # fmt: skip
    path = bashgym_env.workdir / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chats))
    rows = run(bashgym_cli, bashgym_env.workdir / "chat", "-s", "files", "--set",
               f"source.path={path}", "--set", "sink.val_fraction=0")  # fmt: skip
    by_id = {r["messages"][-1]["content"]: r for r in rows}
    assert first(by_id["Hello"]) == ("user", "Hi")  # the blank system message went too
    assert first(by_id["a.py"]) == ("system", DEFAULT_SYSTEM_PROMPT)

    pairs = bashgym_env.workdir / "pairs.csv"
    pairs.write_text("prompt,chosen,rejected\nCapital of France?,Paris,Lyon\n")
    rows = run(bashgym_cli, bashgym_env.workdir / "dpo", "-s", "files", "--set",
               f"source.path={pairs}", "--set", "sink.input=dpo",
               "--set", "sink.dpo_format=trl-conversational")  # fmt: skip
    assert [[m["role"] for m in r["prompt"]] for r in rows] == [["user"]]
