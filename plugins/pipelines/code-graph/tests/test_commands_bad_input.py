"""`bashgym graph stats` / `inspect` on files that are not what they claim: one line, exit 2.

A good triplets Parquet with a run.json beside it that is not JSON, is a list, or holds the
wrong shapes; and Parquet files that lack a column the command reads.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bashgym_pipelines_code_graph.pairs import PAIR_COLUMNS

ROW = {
    "pair_type": "calls", "weight": 1.0, "source_repo": "demo", "anchor": "def a(): b()",
    "positive": "def b(): pass", "negative": "def c(): pass",
    "anchor_id": "a", "positive_id": "b", "negative_id": "c",
}  # fmt: skip


def write_triplets(path, drop=(), **changes):
    row = {**ROW, **changes}
    columns = {k: [v] for k, v in row.items() if k not in drop}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def test_the_fixture_row_has_the_columns_the_pipeline_writes():
    assert set(ROW) <= set(PAIR_COLUMNS)


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\x00\xff not json \x80", "Invalid JSON"),
        (b"[1, 2]", "should be an object"),
        (b'"text"', "should be an object"),
        (json.dumps({"counts": [1]}).encode(), "counts"),
        (json.dumps({"usage": {"input_tokens": "many"}}).encode(), "usage.input_tokens"),
        (json.dumps({"cost_usd": "free"}).encode(), "cost_usd"),
    ],
)
def test_a_bad_run_json_is_one_line(bashgym_cli, tmp_path, content, says):
    write_triplets(tmp_path / "run" / "data.parquet")
    (tmp_path / "run" / "run.json").write_bytes(content)
    for args in (("stats", tmp_path / "run"), ("stats", tmp_path / "run" / "data.parquet")):
        result = bashgym_cli("graph", *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and "run.json" in result.stderr
        assert says in result.stderr


def test_a_run_json_with_more_than_graph_stats_reads_is_fine(bashgym_cli, tmp_path):
    write_triplets(tmp_path / "run" / "data.parquet")
    summary = {
        "counts": {"graph.repos": 1, "graph.nodes": 3, "graph.edges.calls": 2, "kept": None,
                   "qa.accepted": 1, "dropped": {"code-qa: cites no node": 2}},
        "usage": {"input_tokens": 10, "output_tokens": 4, "requests": 2},
        "cost_usd": 0.5, "outputs": {}, "notes": [],
    }  # fmt: skip
    (tmp_path / "run" / "run.json").write_text(json.dumps(summary))
    result = bashgym_cli("graph", "stats", tmp_path / "run", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["nodes"] == 3 and data["edges"] == {"calls": 2}
    assert data["qa"]["rejected"] == 2 and data["tokens"] == {"input": 10, "output": 4}


@pytest.mark.parametrize("command", ["stats", "inspect"])
@pytest.mark.parametrize("column", ["pair_type", "source_repo", "weight", "anchor", "negative"])
def test_a_parquet_missing_a_column_is_named(bashgym_cli, tmp_path, command, column):
    path = write_triplets(tmp_path / "t.parquet", drop=(column,))
    result = bashgym_cli("graph", command, path)
    reads = command == "inspect" or column in ("pair_type", "source_repo")
    if not reads:  # stats counts by type and repository only
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert f"has no {column} column" in result.stderr and result.stderr.count("\n") == 1


def test_a_text_weight_and_a_junk_file_are_refused(bashgym_cli, tmp_path):
    text_weight = write_triplets(tmp_path / "w.parquet", weight="heavy")
    result = bashgym_cli("graph", "inspect", text_weight)
    assert result.exit_code == 2 and "weight column is not numeric" in result.stderr
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(bytes(range(256)))
    for command in ("stats", "inspect"):
        result = bashgym_cli("graph", command, junk)
        assert result.exit_code == 2 and "not a readable Parquet dataset" in result.stderr


def test_a_run_whose_model_had_no_price_says_its_cost_is_unknown(bashgym_cli, tmp_path):
    """run.json's `cost_usd` is null when a model without a price answered (with
    `cost_known_usd` beside it): `graph stats` refused such a run as "not a run's run.json"."""
    from bashgym.events import Tally, UsageCharged
    from bashgym.records import Usage

    tally = Tally()
    tally(UsageCharged.of(Usage(input_tokens=10, output_tokens=5), 0.5, model="gpt", alias="qa"))
    tally(UsageCharged.of(Usage(input_tokens=7, output_tokens=3), None, model="local", alias="j"))
    summary = tally.summary()
    summary["counts"].update({"graph.repos": 1, "graph.nodes": 3})
    write_triplets(tmp_path / "run" / "data.parquet")
    (tmp_path / "run" / "run.json").write_text(json.dumps(summary))
    result = bashgym_cli("graph", "stats", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert "cost $0.5000 + unknown (no price for local)" in result.stdout
    as_json = json.loads(bashgym_cli("graph", "stats", tmp_path / "run", "--json").stdout)
    assert as_json["cost_usd"] is None and as_json["cost_known_usd"] == 0.5
