"""`bashgym run ... -x claude-cli` and `[executor] plugin = "agent-sdk"` in a run file: the real
`claude` binary in each task's workspace, through the configured environment, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_testing import RecordedRequest, Reply, ToolUse

KEY_ENV = "BASHGYM_E2E_ANTHROPIC_KEY"


def answered(request: RecordedRequest) -> bool:
    last = request.messages[-1] if request.messages else {}
    content = last.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


@pytest.fixture
def claude_settings(bashgym_env: Any, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_ENV, "sk-e2e")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    Path("bashgym.toml").write_text(
        "[models.claude]\n"
        'provider = "anthropic"\n'
        'model = "claude-sonnet-4-5"\n'
        f'endpoint = "{model_server.anthropic_base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\n'
        "params = { max_retries = 0 }\n"
    )
    model_server.add_rule(answered, Reply("Done."))
    for name in ("alpha", "beta"):
        bash = ToolUse("Bash", {"command": f"echo {name} > {name}.txt && cat {name}.txt"})
        model_server.add_rule(f"make {name}", Reply(tool_calls=[bash]))
    Path("tasks.txt").write_text("make alpha\nmake beta\n")
    return model_server


def check_run(out: Path, server: Any) -> None:
    rows = [
        json.loads(line)
        for part in ("train", "val")
        for line in (out / "nemo-jsonl" / f"{part}.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2
    for row in rows:
        roles = [m["role"] for m in row["messages"] if m["role"] != "system"]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert row["messages"][-1]["content"] == "Done."
        tool = next(m for m in row["messages"] if m["role"] == "tool")
        assert tool["content"] in ("alpha", "beta")
        assert "Bash" in [t["function"]["name"] for t in row["tools"]]
    finished = [
        json.loads(line)
        for line in (out / "events.jsonl").read_text().splitlines()
        if '"task_finished"' in line
    ]
    assert [e["status"] for e in finished] == ["success", "success"]
    assert {r.api_key for r in server.completions} == {"sk-e2e"}


@pytest.mark.parametrize(
    "env",
    [
        ["-e", "local"],
        ["-e", "bubblewrap", "--set", "environment.network=true",
         "--set", "executor.config_dir=/tmp/claude-config"],
    ],
    ids=["local", "bubblewrap"],
)  # fmt: skip
def test_run_with_claude_cli(bashgym_cli: Any, claude_settings: Any, env: list[str]) -> None:
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", "source.path=tasks.txt", "-x", "claude-cli",
        "-k", "nemo-jsonl", "-o", "out", *env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    check_run(Path("out"), claude_settings)


def test_run_file_with_agent_sdk(bashgym_cli: Any, claude_settings: Any) -> None:
    Path("run.toml").write_text(
        '[source]\nplugin = "prompts"\npath = "tasks.txt"\n\n'
        '[executor]\nplugin = "agent-sdk"\nmax_turns = 5\n\n'
        '[[sinks]]\nplugin = "nemo-jsonl"\n'
    )
    result = bashgym_cli("run", "run.toml", "-o", "out", "-e", "local")
    assert result.exit_code == 0, result.output
    check_run(Path("out"), claude_settings)
