"""-n (num_records, "rows to generate") for code-graph-pairs: at most N triplets are written,
and the terminal's counts say what happened (kept never exceeds generated unexplained), through
the real CLI on the sample repository (27 graph nodes)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

NODES = 27


def structural(bashgym_cli, repo, out, *extra):
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={repo}", "-p", "code-graph-pairs",
        "--set", "pipeline.qa=false", *extra, "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output, json.loads((out / "run.json").read_text())


def test_n_caps_the_triplets_and_says_how_many_were_left_out(bashgym_cli, sample_repo, tmp_path):
    output, summary = structural(bashgym_cli, sample_repo, tmp_path / "run", "-n", "5")
    counts = summary["counts"]
    frame = pq.read_table(tmp_path / "run" / "data.parquet").to_pandas()
    assert len(frame) == counts["kept"] == 5 == counts["requested"] == counts["generated"]
    assert "5 generated, 5 kept" in output
    made = 5 + counts["pairs.left_out"]
    assert counts["pairs.left_out"] > 30  # the sample has 35 edges alone
    assert sum(counts[f"pairs.{k}"] for k in frame["pair_type"].unique()) == 5
    assert frame["pair_type"].nunique() > 1  # spread over the types, not the list's head
    said = f"-n 5 wrote 5 of the {made} triplets made ({made - 5} left out"
    assert any(said in note for note in summary["notes"]), summary["notes"]
    assert said in output


def test_without_n_every_triplet_is_written_and_the_counts_are_explained(
    bashgym_cli, sample_repo, tmp_path
):
    output, summary = structural(bashgym_cli, sample_repo, tmp_path / "run")
    counts = summary["counts"]
    # 'generated' is what the pipeline produced (triplets, after finalize), so never below kept
    assert counts["generated"] == counts["kept"] > NODES and "pairs.left_out" not in counts
    said = f"{counts['kept']} triplets from the {NODES} rows DataDesigner made"
    assert any(said in note for note in summary["notes"]), summary["notes"]
    assert f"{counts['kept']} generated, {counts['kept']} kept" in output and said in output


def test_n_reaches_every_question_once(
    scripted_models, bashgym_cli, sample_repo, tmp_path, qa_model
):
    """DataDesigner's seed is as long as the rows asked of it: with -n below the graph's
    nodes, every question still fits (they were spread over one row per node, and those past
    -n were never asked); with -n above, none is asked twice."""
    server = scripted_models.server
    for n, asked in (("2", 2), ("40", 4)):
        server.reset()
        qa_model.script(server)
        out = tmp_path / f"run{n}"
        result = bashgym_cli(
            "run", "-s", "code-repo", "--set", f"source.path={sample_repo}",
            "-p", "code-graph-pairs", "--set", "pipeline.questions_per_repo=4", "-n", n,
            "-k", "parquet", "--out", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        questions = [r for r in server.completions if qa_model.is_question(r)]
        assert len(questions) == asked, (n, len(questions))
        assert len({r.last_user_text for r in questions}) == asked  # none asked twice
        counts = json.loads((out / "run.json").read_text())["counts"]
        assert counts["kept"] <= int(n)
        frame = pq.read_table(out / "data.parquet").to_pandas()
        if n == "2":  # the answers were paid for: their triplets come first under the cap
            assert set(frame["pair_type"]) <= {"qa", "co_relevant"}


def test_n_above_what_the_repository_yields_writes_only_real_triplets_and_says_so(
    scripted_models, bashgym_cli, sample_repo, tmp_path, qa_model
):
    """-n 500 on a repository of 27 nodes: DataDesigner is asked for 500 rows, most of them
    placeholders; only the triplets the graph and the accepted answers give are written, and
    the counts and a note say how many fewer than asked, and why (they said nothing)."""
    qa_model.script(scripted_models.server)
    for qa in ("true", "false"):
        out = tmp_path / f"run-qa-{qa}"
        result = bashgym_cli(
            "run", "-s", "code-repo", "--set", f"source.path={sample_repo}",
            "-p", "code-graph-pairs", "--set", f"pipeline.qa={qa}", "-n", "500",
            "-k", "parquet", "--out", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "run.json").read_text())
        counts = summary["counts"]
        frame = pq.read_table(out / "data.parquet").to_pandas()
        made = len(frame)
        for column in ("anchor", "positive", "negative", "positive_id", "negative_id"):
            assert frame[column].astype(str).str.strip().ne("").all(), (qa, column)
        kinds = frame["pair_type"].unique()
        assert counts["kept"] == made == sum(counts[f"pairs.{k}"] for k in kinds)
        assert counts["requested"] == 500 and "pairs.left_out" not in counts
        assert counts["fewer_than_asked"] == 500 - made and "pairs.short_of_n" not in counts
        qa_made = int(frame["pair_type"].isin(["qa", "co_relevant"]).sum())
        assert (qa_made > 0) == (qa == "true")
        said = (
            f"-n 500 asks for more triplets than there are: the repository yields only {made} "
            f"({made - qa_made} structural pairs of {NODES} graph nodes, {qa_made} from "
            f"accepted answers); all are written, {500 - made} fewer than asked"
        )
        assert any(said in note for note in summary["notes"]), summary["notes"]
        assert said in " ".join(result.output.split())  # the display may wrap a long note
