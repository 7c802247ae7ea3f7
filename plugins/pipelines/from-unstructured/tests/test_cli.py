"""A real `bashgym run`: the repo's example documents → from-unstructured → nemo-jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from bashgym_designer.rubrics import get_rubric
from bashgym_testing.server import Reply

RUBRIC = get_rubric("groundedness")
DOCUMENTS = Path(__file__).resolve().parents[4] / "examples" / "documents"


def judge_reply(request) -> Reply:
    score = 1 if "release-notes.pdf" in request.last_user_text else 5  # one chunk judged poorly
    body = {c: {"reasoning": "scripted", "score": score} for c in RUBRIC.names}
    return Reply("```json\n" + json.dumps(body) + "\n```")


def test_documents_become_grounded_qa_lines(scripted_models, bashgym_cli, tmp_path):
    assert DOCUMENTS.is_dir()
    scripted_models.server.add_rule(
        lambda r: r.last_user_text.startswith(RUBRIC.instructions), judge_reply
    )
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "documents", "--set", f"source.path={DOCUMENTS}", "-p", "from-unstructured",
        "-n", "4", "-k", "nemo-jsonl", "--set", "sink.val_fraction=0",
        "--set", "sink.keep_fields=[\"chunk_id\", \"source_path\"]", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok" and summary["counts"]["kept"] == 3, summary["counts"]
    dropped = summary["counts"]["dropped"]
    assert [n for r, n in dropped.items() if "groundedness below 3" in r] == [1], dropped

    lines = [json.loads(x) for x in (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()]
    assert sorted(line["source_path"] for line in lines) == [
        "chunking.md", "getting-started.md", "tokens.py"
    ]  # fmt: skip
    for line in lines:
        assert line["chunk_id"] == f"{line['source_path']}#0"
        assert [m["role"] for m in line["messages"]] == ["user", "assistant"]  # Q&A: no agent
        assert line["messages"][0]["content"].strip() and line["messages"][1]["content"].strip()
