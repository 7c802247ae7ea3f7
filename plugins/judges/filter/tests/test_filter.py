"""The `filter` judge: its options, and the processor it adds to a run's builder."""

from __future__ import annotations

import pandas as pd
import pytest
from bashgym_designer.designer import generate, prepare_environment, seed_frame
from bashgym_designer.drops import read_drops
from bashgym_designer.filters import FilterRule
from bashgym_judges_filter import FilterJudge, FilterOptions
from pydantic import ValidationError

from bashgym.contracts import RunContext
from bashgym.settings import Settings


@pytest.fixture
def settings(tmp_path):
    settings = Settings(cache_dir=tmp_path / "cache")
    prepare_environment(settings)
    return settings


def scored_builder(scores: list[int]):
    """Seed rows with an int `n` and a judge-like nested JSON column `quality`."""
    import data_designer.config as dd

    builder = dd.DataDesignerConfigBuilder()
    builder.with_seed_dataset(seed_frame(pd.DataFrame({"n": scores})))
    builder.add_column(
        dd.ExpressionColumnConfig(
            name="quality", expr='{"correctness": {"score": {{ n }}, "reasoning": "r{{ n }}"}}'
        )
    )
    return builder


def test_rules_are_checked_when_options_are_read():
    with pytest.raises(ValidationError, match="not valid Jinja"):
        FilterRule(keep="{{ quality.score >= }}", reason="x")
    with pytest.raises(ValidationError, match="not a Jinja template"):
        FilterRule(keep="quality.score >= 3", reason="x")
    with pytest.raises(ValidationError, match="at least 1 item"):
        FilterOptions(rules=[])
    with pytest.raises(ValidationError, match="reason"):
        FilterRule(keep="{{ x }}", reason="")
    options = FilterOptions.model_validate({"rules": [{"keep": "{{ ok }}", "reason": "not ok"}]})
    assert options.name == "filter" and options.rules[0].reason == "not ok"


def test_filter_judge_is_registered_and_adds_the_processor(tmp_path, settings, bashgym_host):
    judge = bashgym_host.registry.get("judges", "filter").obj
    assert isinstance(judge, FilterJudge)
    builder = scored_builder([1, 4])
    options = FilterOptions(
        name="mine", rules=[FilterRule(keep="{{ n >= 2 }}", reason="n below 2")]
    )
    judge.configure(builder, options, RunContext(run_dir=tmp_path, settings=settings))
    result = generate(builder, num_records=2, run_dir=tmp_path, settings=settings)
    assert result.dataset["n"].tolist() == [4]
    assert [(d.by, d.reason) for d in read_drops(result.artifact_dir)] == [
        ("filter mine", "n below 2")
    ]
