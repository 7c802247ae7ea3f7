"""The shipped example (examples/csv/run.toml) resolves as written, and its CSV profiles into
template questions of every kind."""

from __future__ import annotations

from bashgym_pipelines_csv_triangulation.options import KINDS
from bashgym_pipelines_csv_triangulation.pipeline import csv_path, load_profile
from bashgym_pipelines_csv_triangulation.templates import template_questions

from bashgym.plugins import PluginHost
from bashgym.runspec import load_run_file, resolve


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
