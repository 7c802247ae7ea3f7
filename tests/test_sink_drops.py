"""A row a sink refuses is in dropped.jsonl beside every other drop: who (the sink), why, and the
row's id, once each, so a user finds why it is missing from the output (run.json's
`dropped_rows` only lists the ids). Here a streamed run: nemo-jsonl refuses, as it writes each
batch, a session with no user turn, which Parquet writes."""

from __future__ import annotations

import json

SESSION = {"type": "assistant", "uuid": "a1", "sessionId": "s1",
           "timestamp": "2026-05-01T10:00:00Z",
           "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": [{"type": "text", "text": "hello"}],
                       "usage": {"input_tokens": 10, "output_tokens": 2}}}  # fmt: skip


def test_a_row_a_streamed_sink_refuses_is_in_dropped_jsonl(bashgym_cli, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "s1.jsonl").write_text(json.dumps(SESSION) + "\n")
    out = tmp_path / "run"
    result = bashgym_cli("run", "-s", "claude-code", "--set", f"source.path={corpus}",
                         "-k", "nemo-jsonl", "-k", "parquet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    ((key, n),) = summary["counts"]["dropped"].items()
    assert n == 1 and key.startswith("sink nemo-jsonl: ")
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert dropped == [
        {
            "by": "sink nemo-jsonl",
            "reason": key.removeprefix("sink nemo-jsonl: "),
            "row": {"row_id": str(corpus / "s1.jsonl")},
        }
    ]
    assert summary["dropped_rows"] == {key: [str(corpus / "s1.jsonl")]}
    assert summary["artifacts"]["dropped_rows"] == str(out / "dropped.jsonl")


def test_a_dropped_jsonl_that_cannot_be_written_does_not_cost_the_run_its_status(
    bashgym_cli, tmp_path
):
    """dropped.jsonl is written at the run's end, outside the steps: a failure there (a full
    disk; here a folder in its place) once escaped before run.json was finished, leaving it
    `running` with a traceback. The run ends as it would have, and a note says what was not
    written."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "s1.jsonl").write_text(json.dumps(SESSION) + "\n")
    out = tmp_path / "run"
    (out / "dropped.jsonl").mkdir(parents=True)  # a folder where the file goes
    result = bashgym_cli("run", "-s", "claude-code", "--set", f"source.path={corpus}",
                         "-k", "nemo-jsonl", "-k", "parquet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok" and summary["counts"]["kept_by_sink"]["parquet"] == 1
    assert any("dropped.jsonl could not be written" in note for note in summary["notes"])
    assert "Traceback" not in result.output
