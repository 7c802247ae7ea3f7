"""The `filter` judge: its options, and the processor it adds to a run's builder."""

from __future__ import annotations

import pytest
from bashgym_designer.designer import generate
from bashgym_designer.drops import read_drops
from bashgym_designer.filters import FilterRule
from bashgym_designer.testing import ready_settings, scored_builder
from bashgym_judges_filter import FilterJudge, FilterOptions
from pydantic import ValidationError

from bashgym.contracts import RunContext


@pytest.fixture
def settings(tmp_path):
    return ready_settings(tmp_path)


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
