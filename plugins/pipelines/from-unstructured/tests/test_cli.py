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


SECRET = "ghp_" + "x7Kd9Qm2Lp4Rt6Vw8Yz1Bc3Fg5Hj7Nq9Sa2D"  # a GitHub token's shape
ALPHA = "Alpha is the first release channel. " * 8
BETA = "Beta is the second release channel. " * 8


def writer_reply(request) -> Reply:
    """Questions name the passage's channel (beta's quotes a token); beta's answer is blank."""
    text = request.last_user_text
    beta = "Beta is the second" in text
    if text.startswith("Answer the question"):
        return Reply("   " if beta else "It is the first release channel.")
    return Reply(f"Which token, {SECRET}, opens beta?" if beta else "What is alpha?")


def test_a_row_finalize_drops_is_in_dropped_jsonl_whole_and_scrubbed(
    scripted_models, bashgym_cli, tmp_path
):
    """The model answers beta's question with blanks: finalize drops the row ("no answer").
    Before: run.json counted it, dropped.jsonl and the report's examples had no such row."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text(ALPHA)
    (docs / "beta.md").write_text(BETA)
    server = scripted_models.server
    body = {c: {"reasoning": "scripted", "score": 5} for c in RUBRIC.names}
    server.add_rule(
        lambda r: r.last_user_text.startswith(RUBRIC.instructions),
        Reply("```json\n" + json.dumps(body) + "\n```"),
    )
    server.add_rule(lambda r: r.last_user_text != "Hello!", writer_reply)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "documents", "--set", f"source.path={docs}", "-p", "from-unstructured",
        "-k", "nemo-jsonl", "--set", "sink.val_fraction=0", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["dropped"] == {"from-unstructured: no answer": 1}  # as before
    assert (counts["generated"], counts["kept"]) == (1, 1)
    (row,) = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert (row["by"], row["reason"]) == ("pipeline from-unstructured", "no answer")
    assert row["row"]["path"] == "beta.md" and row["row"]["text"].startswith("Beta is")
    assert row["row"]["answer"].strip() == "" and "opens beta?" in row["row"]["question"]
    assert SECRET not in (out / "dropped.jsonl").read_text()  # the model's words, scrubbed
    page = (out / "report.html").read_text()
    assert SECRET not in page
    assert "opens beta?" in page.split("Examples of dropped rows")[1]
