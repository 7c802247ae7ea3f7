"""`bashgym run -s prompts -x student -k nemo-jsonl`: the executor as a run role, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bashgym_testing import RecordedRequest, Reply, ToolUse


def answered(request: RecordedRequest) -> bool:
    return bool(request.messages) and request.messages[-1].get("role") == "tool"


def test_run_with_the_student(bashgym_cli: Any, scripted_models: Any) -> None:
    server = scripted_models.server
    server.add_rule("loop forever", Reply(tool_calls=[ToolUse("list_directory", {})]))
    server.add_rule(answered, Reply("Done."))
    for name in ("alpha", "beta"):
        call = ToolUse("write_file", {"path": f"{name}.txt", "content": name})
        server.add_rule(f"write {name}", Reply(tool_calls=[call]))
    Path("tasks.txt").write_text("write alpha\nwrite beta\nloop forever\n")

    result = bashgym_cli(
        "run", "-s", "prompts", "--set", "source.path=tasks.txt", "-x", "student",
        "--set", "executor.max_turns=3", "-k", "nemo-jsonl", "-o", "out",
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    rows = [
        json.loads(line)
        for part in ("train", "val")
        for line in Path(f"out/nemo-jsonl/{part}.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2  # the task that ran out of turns ends with a tool result: dropped
    for row in rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]
        assert row["tools"][0]["function"]["name"] == "read_file"
    prompts = sorted(r["messages"][1]["content"] for r in rows)
    assert prompts == ["write alpha", "write beta"]

    finished = [
        json.loads(line)
        for line in Path("out/events.jsonl").read_text().splitlines()
        if '"task_finished"' in line
    ]
    assert sorted(e["status"] for e in finished) == ["failed", "success", "success"]
    # success removes the workspace, failure keeps it for a look
    kept = sorted(p.name for p in Path("out/workspaces").iterdir())
    assert len(kept) == 1
    outputs = [line for line in Path("out/events.jsonl").read_text().splitlines()
               if '"task_output"' in line]  # fmt: skip
    assert any("write_file" in line for line in outputs)
