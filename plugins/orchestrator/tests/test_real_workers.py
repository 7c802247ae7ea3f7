"""Real workers: the `claude` binary (bundled in the claude-agent-sdk wheel) against the scripted
Anthropic server on a 5-task DAG, and the student executor against the scripted OpenAI server
on a 2-task plan. The server answers by the task named in the worker's prompt (workers run in
parallel, so a FIFO script would not do): first a Bash call doing the task, then a summary."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from bashgym_testing import Reply, ToolUse

KEY_ENV = "BASHGYM_TEST_ANTHROPIC_KEY"
TASK = re.compile(r"Task ([A-Za-z0-9._-]+): ")


def _texts(request: Any) -> list[str]:
    out = []
    for message in request.messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def _tool_results(request: Any) -> int:
    """Tool results in the conversation so far (Anthropic blocks or OpenAI `tool` messages)."""
    n = 0
    for message in request.messages:
        if message.get("role") == "tool":
            n += 1
        content = message.get("content")
        if isinstance(content, list):
            n += sum(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return n


def by_task(commands: dict[str, str], tool: str, arg: str = "command") -> Any:
    """A rule: the Bash call of the task the prompt names, then its summary."""

    def answer(request: Any) -> Reply:
        found = next((m for t in _texts(request) if (m := TASK.search(t))), None)
        if found is None or found.group(1) not in commands:
            return Reply("ok")
        tid = found.group(1)
        if _tool_results(request) == 0:
            return Reply(f"Doing {tid}.", tool_calls=[ToolUse(tool, {arg: commands[tid]})])
        return Reply(f"Task {tid} is done.")

    return answer


@pytest.mark.slow
def test_claude_binary_on_a_5_task_dag(
    bashgym_cli: Any,
    no_scrub: None,
    bashgym_env: Any,
    model_server: Any,
    repo: Path,
    tmp_path: Path,
    orch: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-scripted")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    (bashgym_env.workdir / "bashgym.toml").write_text(
        f'[models.claude]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'
        f'endpoint = "{model_server.anthropic_base_url}"\napi_key_env = "{KEY_ENV}"\n'
        "params = {max_retries = 0}\n"
    )
    flag = tmp_path / "failed-once"
    commands = {
        "a": "echo A > a.txt",
        "b": "echo from-b >> shared.txt",
        "c": "echo from-c >> shared.txt",
        "d": "cat a.txt > d.txt",
        "e": f"if [ -f {flag} ]; then echo good > e.txt; else touch {flag}; echo bad > e.txt; fi",
    }
    model_server.add_rule(lambda r: True, by_task(commands, "Bash"))
    deps = {"d": ["a"], "e": ["d"]}
    tasks = [
        orch.plan_task(
            tid,
            f"Run `{cmd}`.",
            deps=deps.get(tid, []),
            check="grep -q good e.txt" if tid == "e" else None,
        )
        for tid, cmd in commands.items()
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, verify="test -f a.txt && test -f e.txt")

    done = bashgym_cli(
        "orchestrate",
        "run",
        job.dir,
        "-x",
        "claude-cli",
        "-e",
        "local",
        "--workers",
        "3",
        "-k",
        "nemo-jsonl",
        "--set",
        f"source.executor_options.config_dir={tmp_path / 'cc'}",
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None
    states = {tid: t["state"] for tid, t in result["tasks"].items()}
    assert sorted(states.values()) == ["conflicted", "merged", "merged", "merged", "merged"]
    loser = next(tid for tid, s in states.items() if s == "conflicted")
    assert loser in ("b", "c") and result["tasks"][loser]["conflicts"] == ["shared.txt"]
    assert result["tasks"]["e"]["attempts"] == 2
    assert orch.git(repo, "show", "bashgym/job/integration:e.txt") == "good"
    assert result["verify"]["ok"] is True
    assert result["cost_usd"] > 0  # what the binary reported, charged to the job
    assert orch.finished_counts(job) == dict.fromkeys(commands, 1)
    lines = [
        json.loads(x)
        for f in ("train.jsonl", "val.jsonl")
        for x in (job.dir / "nemo-jsonl" / f).read_text().splitlines()
    ]
    assert len(lines) == 6  # 5 successful attempts and the plan
    bash_calls = [c for x in lines for m in x["messages"] for c in m.get("tool_calls", [])]
    assert sum(c["function"]["name"] == "Bash" for c in bash_calls) == 5
    keys = {r.api_key for r in model_server.completions}
    assert keys == {"sk-test-scripted"}


def test_student_on_a_2_task_plan(
    bashgym_cli: Any, no_scrub: None, scripted_models: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    server = scripted_models.server
    commands = {"one": "echo 1 > one.txt", "two": "cat one.txt one.txt > two.txt"}
    server.add_rule(lambda r: True, by_task(commands, "run_command"))
    tasks = [
        orch.plan_task("one", "Make one.txt."),
        orch.plan_task("two", "Make two.txt from one.txt.", deps=["one"]),
    ]
    job = orch.make_job(tmp_path / "job", repo, tasks, check="test -s one.txt")

    done = bashgym_cli(
        "orchestrate", "run", job.dir, "-x", "student", "-e", "local", "-k", "nemo-jsonl"
    )

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 2}
    assert orch.git(repo, "show", "bashgym/job/integration:two.txt") == "1\n1"
    assert result["tasks"]["two"]["files"] == ["two.txt"]
    rows = (job.dir / "nemo-jsonl" / "train.jsonl").read_text().splitlines()
    rows += (job.dir / "nemo-jsonl" / "val.jsonl").read_text().splitlines()
    assert len(rows) == 3
