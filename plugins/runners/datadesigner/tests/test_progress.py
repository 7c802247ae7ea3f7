"""DataDesigner's per-column progress reaches the run as events while it generates."""

from __future__ import annotations

import json
import logging
from collections import Counter

import data_designer.config as dd
import pytest


@pytest.mark.slow  # a whole DataDesigner run: ~10 s quiet, far more on a busy machine
def test_a_run_reports_each_llm_column_as_it_advances(bashgym_cli, scripted_models, tmp_path):
    builder = dd.DataDesignerConfigBuilder(
        [dd.ModelConfig(alias="default", model="scripted-default", provider="default")]
    )
    builder.add_column(
        dd.SamplerColumnConfig(
            name="topic", sampler_type="category",
            params=dd.CategorySamplerParams(values=["parsers", "caches"]),
        )
    )  # fmt: skip
    for name in ("question", "answer"):
        builder.add_column(
            dd.LLMTextColumnConfig(name=name, prompt=f"Write a {name} on {{{{ topic }}}}",
                                   model_alias="default")
        )  # fmt: skip
    config = tmp_path / "qa.yaml"
    builder.write_config(config)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "--pipeline", str(config), "-n", "6", "-k", "parquet", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    columns = Counter()
    totals = {}
    for e in events:
        if e["type"] == "rows_generated" and e["step"].startswith("pipeline column "):
            columns[e["step"]] += e["n"]
            totals[e["step"]] = e["total"]
    # each LLM column's cells, counted once each; samplers are instant and not reported
    assert columns == {"pipeline column question": 6, "pipeline column answer": 6}
    assert totals == {"pipeline column question": 6, "pipeline column answer": 6}
    finished = next(i for i, e in enumerate(events) if e["type"] == "step_finished"
                    and e["step"] == "pipeline")  # fmt: skip
    column_events = [
        i for i, e in enumerate(events) if str(e.get("step", "")).startswith("pipeline column")
    ]
    assert column_events and max(column_events) < finished  # while the step ran


def test_datadesigners_own_reporter_feeds_the_runs_tally(tmp_path):
    """DataDesigner's progress reporter and trackers (the real classes), reporting as they do
    inside create(): each column's cells reach the tally once, a column at 0 too."""
    from bashgym_runners_datadesigner.progress import column_progress
    from data_designer.engine.progress.reporter import AsyncProgressReporter
    from data_designer.engine.progress.tracker import ProgressTracker

    from bashgym.contracts import RunContext
    from bashgym.settings import load_settings

    run = RunContext(run_dir=tmp_path, settings=load_settings())
    trackers = {
        name: ProgressTracker(total_records=4, label=f"column '{name}'", quiet=True)
        for name in ("question", "answer")
    }
    reporter = AsyncProgressReporter(trackers, report_interval=0.0)
    logging.getLogger("data_designer").setLevel(logging.INFO)  # as a run routes its log
    with column_progress(run):
        for _ in range(3):
            reporter.record_success("question")
        reporter.record_failure("question")
        reporter.log_final()
    progress = run.tally.progress
    assert progress["pipeline column question"] == [4, 4]  # failed cells are done too
    assert progress["pipeline column answer"] == [0, 4]  # seen, none done yet
    with column_progress(run, round=2):
        reporter.record_success("answer")
        reporter.log_final()
    assert progress["pipeline column answer (round 2)"] == [1, 4]
