"""The samplers pipeline: option checks, and real DataDesigner generation with and without seeds."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from bashgym_designer.designer import generate, seed_frame
from bashgym_pipelines_samplers.pipeline import SamplersOptions, SamplersPipeline
from pydantic import ValidationError

from bashgym.contracts import RunContext
from bashgym.settings import Settings


def test_options_are_checked():
    with pytest.raises(ValidationError, match="at least one category or expression"):
        SamplersOptions(categories={}, expressions={})
    with pytest.raises(ValidationError, match="weights for unknown category column 'x'"):
        SamplersOptions(weights={"x": [1.0]})
    with pytest.raises(ValidationError, match="has no values"):
        SamplersOptions(categories={"empty": []})


def test_generates_weighted_categories_without_a_model(tmp_path):
    settings = Settings(cache_dir=tmp_path / "cache")
    run = RunContext(run_dir=tmp_path, settings=settings)
    options = SamplersOptions(
        categories={"level": ["low", "high"]},
        weights={"level": [9, 1]},
        expressions={"label": "{{ level }}!"},
    )
    builder = SamplersPipeline().build(options, run, None)
    result = generate(builder, num_records=200, run_dir=tmp_path, settings=settings)
    data = result.dataset
    assert len(data) == 200
    counts = Counter(data["level"])
    assert counts["low"] > counts["high"] * 3  # 9:1 weights, far from uniform
    assert (data["label"] == data["level"] + "!").all()
    assert (tmp_path / "logs" / "datadesigner.log").read_text().count("Creating") == 1


def test_expressions_see_seed_columns(tmp_path):
    settings = Settings(cache_dir=tmp_path / "cache")
    run = RunContext(run_dir=tmp_path, settings=settings)
    seed = pd.DataFrame({"task": ["a", "b", "c"]})
    builder = SamplersPipeline().build(
        SamplersOptions(expressions={"p": "do {{ task }}"}), run, seed
    )
    builder.with_seed_dataset(seed_frame(seed))
    data = generate(builder, num_records=3, run_dir=tmp_path, settings=settings).dataset
    assert sorted(data["p"]) == ["do a", "do b", "do c"]
