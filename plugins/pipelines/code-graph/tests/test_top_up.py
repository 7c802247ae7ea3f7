"""`--top-up` on code-graph-pairs: the first round makes every triplet the graph has and counts
the rest of the rows asked as `fewer_than_asked`, so the top-up stops there, with a note, instead
of asking DataDesigner for a second round of placeholder rows that give no triplet.

A real run through the CLI, DataDesigner and the engine on the sample repository, Q&A off (no
model is asked anything)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq


def test_top_up_stops_after_the_round_the_pipeline_had_no_more_to_make(
    bashgym_cli, sample_repo, tmp_path
):
    """-n 100 --top-up on a repository that yields 59 triplets. Before: a second round asked
    for 70 placeholder rows (requested_in_rounds 170, fewer_than_asked 111) and stopped only
    because it kept nothing."""
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={sample_repo}", "-p", "code-graph-pairs",
        "--set", "pipeline.qa=false", "-n", "100", "--top-up", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    made = len(pq.read_table(out / "data.parquet").to_pandas())
    assert made == 59  # the sample's structural pairs: the graph has no more
    assert summary["rounds"] == [dict(requested=100, generated=made, kept=made, resumed_rows=0)]
    # one round: no `rounds` or `requested_in_rounds` count (those are for more than one)
    assert "rounds" not in counts and "requested_in_rounds" not in counts
    assert (counts["requested"], counts["generated"], counts["kept"]) == (100, made, made)
    assert counts["fewer_than_asked"] == 100 - made  # every row asked: made or fewer
    assert "top_up_surplus" not in counts and not counts.get("dropped")
    said = (
        f"top-up stopped after round 1: the pipeline had no more rows to make "
        f"({100 - made} fewer than asked)"
    )
    assert said in summary["notes"], summary["notes"]
    assert said in " ".join(result.output.split())  # the display may wrap a long note
    assert not any("kept no rows" in note for note in summary["notes"])
