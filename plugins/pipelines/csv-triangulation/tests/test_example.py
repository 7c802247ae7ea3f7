"""The shipped example (examples/csv/run.toml) resolves as written, and its CSV profiles into
template questions of every kind."""

from __future__ import annotations

from bashgym_cli.runs import load_run_file
from bashgym_pipelines_csv_triangulation.options import KINDS
from bashgym_pipelines_csv_triangulation.pipeline import csv_path, load_profile
from bashgym_pipelines_csv_triangulation.templates import template_questions

from bashgym.plugins import PluginHost
from bashgym.runspec import resolve


def test_the_example_run_file_resolves_and_its_csv_has_every_kind(repo, monkeypatch):
    monkeypatch.chdir(repo)  # its paths are relative to where bashgym runs, as the README says
    resolved = resolve(load_run_file(repo / "examples" / "csv" / "run.toml"), PluginHost().registry)
    assert resolved.pipeline.name == "csv-triangulation"
    assert [j.name for j in resolved.judges] == ["triangulation"]
    assert [s.name for s in resolved.sinks] == ["nemo-jsonl"]
    options = resolved.pipeline.options
    assert csv_path(options) == repo / "examples" / "csv" / "orders.csv"
    prof = load_profile(options)
    assert (prof.rows, len(prof.columns)) == (300, 11)
    questions = template_questions(prof, list(KINDS), seed=0, limit=40)
    assert {q.kind for q in questions} == set(KINDS)
    assert any(q.answer_type == "p_value" for q in questions)


def test_bashgym_options_lists_the_pipeline_and_judge_options(bashgym_cli):
    result = bashgym_cli("options", "pipeline", "csv-triangulation", "--json")
    assert result.exit_code == 0, result.output
    listed = result.stdout
    for option in ("pipeline.csv", "pipeline.consistency_runs", "pipeline.sandbox"):
        assert f'"{option}"' in listed
    judge = bashgym_cli("options", "judge", "triangulation", "--json")
    assert judge.exit_code == 0, judge.output
    assert '"judge.float_tolerance"' in judge.stdout and '"judge.require_messages"' in judge.stdout
