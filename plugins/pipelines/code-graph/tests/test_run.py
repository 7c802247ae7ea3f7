"""Real `bashgym run`s: repositories → code-repo → code-graph-pairs → parquet, and the
`bashgym graph` commands on what they wrote."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from bashgym_pipelines_code_graph import source as source_module
from bashgym_pipelines_code_graph.options import CodeRepoOptions
from bashgym_pipelines_code_graph.pairs import PAIR_COLUMNS
from bashgym_pipelines_code_graph.source import NAMESPACE, CodeRepoSource
from bashgym_testing.paths import options_with_path_gone
from pydantic import ValidationError

from bashgym.contracts import InputError, RunContext
from bashgym.settings import Settings

PREFLIGHT = "Reply with OK."
EDGES = {"contains": 20, "calls": 9, "imports": 4, "inherits": 2}


def structural_run(bashgym_cli, out, *paths: str):
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={json.dumps(list(paths))}",
        "-p", "code-graph-pairs", "--set", "pipeline.qa=false", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "run.json").read_text())


def test_structural_run_writes_triplets_that_load_and_match_the_graph(
    scripted_models, bashgym_cli, sample_repo, tmp_path
):
    import datasets

    out = tmp_path / "run"
    summary = structural_run(bashgym_cli, out, str(sample_repo))
    counts = summary["counts"]
    assert counts["graph.nodes"] == 27 and counts["graph.files_failed"] == 2
    assert {k: counts[f"graph.edges.{k}"] for k in EDGES} == EDGES
    assert any("shop/broken.py did not parse" in n for n in summary["notes"])
    # qa=false: the pipeline calls no model (the kernel may send its own one-line preflight)
    asked = [r for r in scripted_models.server.completions if r.last_user_text != PREFLIGHT]
    assert asked == []

    table = pq.read_table(out / "data.parquet")
    assert table.column_names == list(PAIR_COLUMNS)
    frame = table.to_pandas()
    by_type = frame["pair_type"].value_counts().to_dict()
    for kind, n in EDGES.items():  # one pair per edge
        assert by_type[kind] == n == counts[f"pairs.{kind}"]
    assert counts["kept"] == len(frame) == sum(counts[f"pairs.{k}"] for k in by_type)
    assert set(frame["source_repo"]) == {"sample"}
    assert frame[["anchor", "positive", "negative"]].map(bool).all().all()

    loaded = datasets.load_dataset("parquet", data_files=str(out / "data.parquet"))["train"]
    assert loaded.num_rows == len(frame)
    triplets = loaded.select_columns(["anchor", "positive", "negative"])
    assert triplets.column_names == ["anchor", "positive", "negative"]
    assert triplets[0]["anchor"] == frame["anchor"][0]


def test_graph_stats_and_inspect(bashgym_cli, sample_repo, tmp_path):
    out = tmp_path / "run"
    structural_run(bashgym_cli, out, str(sample_repo))
    result = bashgym_cli("graph", "stats", out, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["repos"] == 1 and stats["nodes"] == 27 and stats["edges"] == EDGES
    assert stats["pairs_by_type"]["calls"] == 9 and stats["pairs_by_repo"] == {
        "sample": stats["pairs"]
    }
    assert stats["qa"] == {"accepted": 0, "rejected": 0, "skipped_budget": 0}
    assert stats["files"] == {"files": 9, "files_failed": 2, "files_skipped": 0}
    text = bashgym_cli("graph", "stats", out / "data.parquet").stdout
    assert "graph: 1 repositories, 27 nodes" in text and "calls" in text

    shown = bashgym_cli("graph", "inspect", out / "data.parquet", "-n", "2", "--type", "inherits")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("2 of 2 rows")
    assert "shop.models.DiscountedItem -> shop.models.Item" in shown.stdout
    assert sum(1 for ln in lines if ln.startswith("[")) == 2

    missing = bashgym_cli("graph", "stats", tmp_path / "nope")
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_many_repositories_one_unreadable(bashgym_cli, repo_factory, tmp_path):
    first = repo_factory(tmp_path / "a" / "shop")
    second = repo_factory(tmp_path / "b" / "shop", broken=False)
    out = tmp_path / "run"
    summary = structural_run(bashgym_cli, out, str(first), str(second), str(tmp_path / "gone"))
    counts = summary["counts"]
    assert counts["graph.repos"] == 2 and counts["graph.repos_failed"] == 1
    assert counts["graph.nodes"] == 54
    frame = pq.read_table(out / "data.parquet").to_pandas()
    assert frame["source_repo"].value_counts().to_dict() == {
        "shop": counts["kept"] // 2, "shop-2": counts["kept"] // 2
    }  # fmt: skip
    assert any("gone" in n and "not a folder" in n for n in summary["notes"])


def test_each_repository_is_checkpointed_and_not_parsed_again(repo_factory, tmp_path, monkeypatch):
    repos = [repo_factory(tmp_path / name, broken=False) for name in ("one", "two")]
    run = RunContext(run_dir=tmp_path / "run", settings=Settings())
    options = CodeRepoOptions(path=[str(r) for r in repos])
    first = CodeRepoSource().open(options, run)
    assert run.store.counts(NAMESPACE) == {"done": 2}
    assert sorted(set(first["repo"])) == ["one", "two"]

    def no_parsing(*args, **kwargs):
        raise AssertionError("a finished repository was parsed again")

    monkeypatch.setattr(source_module, "build_graph", no_parsing)
    again = RunContext(run_dir=tmp_path / "run", settings=Settings())
    second = CodeRepoSource().open(options, again)
    assert again.counts["graph.repos_restored"] == 2
    assert second.equals(first)

    # an unfinished repository (a crash while it was parsed) is parsed on resume
    monkeypatch.undo()
    third_repo = repo_factory(tmp_path / "three", broken=False)
    more = CodeRepoOptions(path=[*options.paths, str(third_repo)])
    resumed = RunContext(run_dir=tmp_path / "run", settings=Settings())
    frame = CodeRepoSource().open(more, resumed)
    assert resumed.counts["graph.repos_restored"] == 2 and resumed.counts["graph.repos"] == 3
    assert sorted(set(frame["repo"])) == ["one", "three", "two"]


def test_no_readable_repository_is_an_input_error(tmp_path):
    run = RunContext(run_dir=tmp_path / "run", settings=Settings())
    options = options_with_path_gone(CodeRepoOptions, tmp_path / "gone")
    with pytest.raises(InputError, match="no repository could be read"):
        CodeRepoSource().open(options, run)


def test_no_local_repository_there_is_refused_with_the_options(tmp_path):
    """Before a run folder exists (exit 2 through the CLI), when the source could read none;
    one missing among readable ones is the run's note (test_many_repositories_one_unreadable)."""
    (tmp_path / "file.py").write_text("x = 1\n")
    for given, says in (
        (str(tmp_path / "missing"), "does not exist"),
        (str(tmp_path / "file.py"), "is not a folder"),
        (f"file://{tmp_path / 'missing'}", "does not exist"),
        ([str(tmp_path / "a"), str(tmp_path / "file.py")],
         f"'{tmp_path / 'a'}' does not exist; '{tmp_path / 'file.py'}' is not a folder"),
    ):  # fmt: skip
        with pytest.raises(ValidationError) as raised:
            CodeRepoOptions(path=given)
        (error,) = raised.value.errors()
        assert (error["loc"], error["msg"]) == (("path",), says)
    remote = "https://example.invalid/a/b.git"  # only cloning can tell: never checked here
    assert CodeRepoOptions(path=[str(tmp_path / "missing"), remote]).paths[1] == remote
    assert CodeRepoOptions(path=[str(tmp_path / "missing"), str(tmp_path)]).paths[1]


def test_the_pipeline_needs_graph_rows(bashgym_cli, tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("text\nhello\n")
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={rows}", "-p", "code-graph-pairs",
        "--set", "pipeline.qa=false", "-k", "parquet", "--out", tmp_path / "run",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "not graph rows" in result.output and "code-repo" in result.output
