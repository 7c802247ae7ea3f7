"""A real `bashgym run -p tool-use-sft -k nemo-jsonl`: chat rows in, tool-use lines out."""

from __future__ import annotations

import json

from bashgym_designer.rubrics import get_rubric
from bashgym_testing.server import Reply

RUBRIC = get_rubric("tool-use")
CONVERSATION = {
    "user_request": "Which Python version does CI use?",
    "steps": [
        {
            "thought": "The CI config will say.",
            "name": "search_code",
            "arguments": json.dumps({"pattern": "python-version", "path": ".github"}),
            "output": ".github/workflows/ci.yml:14:          python-version: '3.11'",
        }
    ],
    "final_answer": "CI runs Python 3.11 (.github/workflows/ci.yml, line 14).",
}


def test_tool_use_lines_carry_the_tools_schema(scripted_models, bashgym_cli, tmp_path):
    server = scripted_models.server
    body = {c: {"reasoning": "scripted", "score": 5} for c in RUBRIC.names}
    server.add_rule(
        lambda r: r.last_user_text.startswith(RUBRIC.instructions),
        Reply("```json\n" + json.dumps(body) + "\n```"),
    )
    server.add_rule("Write one realistic training example", Reply(json.dumps(CONVERSATION)))
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-p", "tool-use-sft", "-n", "3", "-k", "nemo-jsonl",
        "--set", "sink.val_fraction=0", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok" and summary["counts"]["kept"] == 3, summary["counts"]
    lines = [json.loads(x) for x in (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    for line in lines:
        assert [m["role"] for m in line["messages"]] == [
            "system", "user", "assistant", "tool", "assistant"
        ]  # fmt: skip
        call = line["messages"][2]["tool_calls"][0]
        assert call["function"]["name"] == "search_code"
        assert call["function"]["arguments"] == {  # objects: what chat templates render
            "pattern": "python-version", "path": ".github"
        }  # fmt: skip
        assert "search_code" in [t["function"]["name"] for t in line["tools"]]
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    assert manifest["input"] == "chat" and manifest["format"] == "tool-use"
