"""The `bashgym-filter` processor inside real DataDesigner runs."""

from __future__ import annotations

import contextlib
import json
from importlib.metadata import entry_points

import pandas as pd
import pytest
from bashgym_designer.designer import (
    PLACEHOLDER_PROVIDER,
    generate,
    seed_frame,
)
from bashgym_designer.drops import read_drops
from bashgym_designer.filters import FilterRule, add_filter
from bashgym_designer.filters.rules import is_truthy, row_record
from bashgym_designer.models import model_config, providers_for
from bashgym_designer.testing import ready_settings, scored_builder


@pytest.fixture
def settings(tmp_path):
    return ready_settings(tmp_path)


def test_truthiness_and_cell_values():
    assert is_truthy("True") and is_truthy(" yes ") and is_truthy("3")
    assert not any(map(is_truthy, ["False", "false", "0", "None", "", "  ", "[]"]))
    import numpy as np

    cells = {
        "arr": np.array([{"a": np.int64(1)}, {"a": 2}], dtype=object),
        "json": '{"x": {"score": 4}}',
        "num": "42",  # DataDesigner's expressions parse JSON text too
        "text": "plain words",
        "nan": np.float64("nan"),
    }
    assert row_record(cells) == {
        "arr": [{"a": 1}, {"a": 2}],
        "json": {"x": {"score": 4}},
        "num": 42,
        "text": "plain words",
        "nan": None,
    }


def test_drops_failing_rows_first_rule_wins_and_records_each(tmp_path, settings):
    builder = scored_builder([1, 2, 3, 4, 5, 5])
    add_filter(
        builder,
        "quality-thresholds",
        [
            FilterRule(keep="{{ quality.correctness.score >= 2 }}", reason="correctness below 2"),
            FilterRule(keep="{{ quality.correctness.score >= 4 }}", reason="correctness below 4"),
            FilterRule(keep="{{ n != 1 }}", reason="never reached for n=1"),
        ],
    )
    result = generate(builder, num_records=6, run_dir=tmp_path, settings=settings)
    assert sorted(result.dataset["n"]) == [4, 5, 5]
    drops = sorted(read_drops(result.artifact_dir), key=lambda d: d.row["n"])
    assert [(d.by, d.reason, d.row["n"]) for d in drops] == [
        ("filter quality-thresholds", "correctness below 2", 1),
        ("filter quality-thresholds", "correctness below 4", 2),
        ("filter quality-thresholds", "correctness below 4", 3),
    ]
    assert json.loads(drops[0].row["quality"]) == {"correctness": {"score": 1, "reasoning": "r1"}}
    # The parquet files DataDesigner wrote hold only the kept rows too.
    assert len(pd.read_parquet(result.artifact_dir / "parquet-files")) == 3


def test_keeps_every_row_when_all_pass(tmp_path, settings):
    builder = scored_builder([3, 4, 5])
    add_filter(builder, "f", [FilterRule(keep="{{ quality.correctness.score > 0 }}", reason="x")])
    result = generate(builder, num_records=3, run_dir=tmp_path, settings=settings)
    assert sorted(result.dataset["n"]) == [3, 4, 5]
    assert read_drops(result.artifact_dir) == []


def test_unevaluable_condition_drops_the_row_with_the_error(tmp_path, settings):
    import data_designer.config as dd

    builder = dd.DataDesignerConfigBuilder()
    seed = pd.DataFrame(
        {
            "meta": ['{"a": {"b": 1}}', '{"a": {"b": 1}}', '{"c": 1}', '{"a": {"b": 5}}'],
            "tags": [["x"], [], ["y", "z"], ["w"]],
        }
    )
    builder.with_seed_dataset(seed_frame(seed))
    builder.add_column(dd.ExpressionColumnConfig(name="k", expr="{{ tags | length }}"))
    add_filter(
        builder,
        "f",
        [
            FilterRule(keep="{{ meta.a.b < 3 }}", reason="b too big"),  # row 3 has no `a`
            FilterRule(keep="{{ tags | length > 0 }}", reason="no tags"),  # a numpy array cell
        ],
    )
    result = generate(builder, num_records=4, run_dir=tmp_path, settings=settings)
    assert result.dataset["k"].tolist() == ["1"]
    reasons = sorted(d.reason for d in read_drops(result.artifact_dir))
    assert reasons[0] == "b too big"
    assert reasons[1].startswith("b too big (condition failed: UndefinedError:")
    assert reasons[2] == "no tags"


def test_condition_naming_an_unknown_column_drops_with_reason(tmp_path, settings):
    builder = scored_builder([3, 4])
    add_filter(
        builder,
        "f",
        [
            FilterRule(keep="{{ n > 3 }}", reason="small"),
            FilterRule(keep="{{ no_such_column }}", reason="typo"),
        ],
    )
    builder_config_ok = builder.build()  # DataDesigner itself accepts the config
    assert builder_config_ok.processors[0].processor_type == "bashgym-filter"
    from data_designer.errors import DataDesignerError

    # Every row is dropped: DataDesigner may raise for the empty dataset; the drops stay.
    with contextlib.suppress(DataDesignerError):
        generate(builder, num_records=2, run_dir=tmp_path, settings=settings)
    drops = read_drops(tmp_path / "datadesigner" / "dataset")
    assert sorted(d.reason.split(" (")[0] for d in drops) == ["small", "typo"]
    typo = next(d for d in drops if d.reason.startswith("typo"))
    assert "condition failed" in typo.reason and "no_such_column" in typo.reason


def test_preview_runs_the_filter(tmp_path, settings):
    import data_designer.config as dd
    from data_designer.interface import DataDesigner

    builder = scored_builder([1, 5, 5])
    add_filter(
        builder, "f", [FilterRule(keep="{{ quality.correctness.score >= 3 }}", reason="low")]
    )
    designer = DataDesigner(
        artifact_path=tmp_path / "dd", model_providers=[dd.ModelProvider(**PLACEHOLDER_PROVIDER)]
    )
    designer.set_run_config(dd.RunConfig(otel_metrics_port=None))
    preview = designer.preview(builder, num_records=3)
    assert preview.dataset["n"].tolist() == [5, 5]
    drops = read_drops(tmp_path / "dd" / "preview-dataset")
    assert [(d.reason, d.row["n"]) for d in drops] == [("low", 1)]


def test_config_with_the_filter_serializes_and_loads_back(tmp_path, settings):
    import data_designer.config as dd

    builder = dd.DataDesignerConfigBuilder()
    builder.add_column(
        dd.SamplerColumnConfig(
            name="n", sampler_type="category", params=dd.CategorySamplerParams(values=[1, 2])
        )
    )
    add_filter(builder, "f", [FilterRule(keep="{{ n > 1 }}", reason="one")])
    path = tmp_path / "config.json"
    builder.write_config(path)
    saved = json.loads(path.read_text())
    processors = saved.get("data_designer", saved).get("processors")
    assert processors == [
        {
            "name": "f",
            "processor_type": "bashgym-filter",
            "rules": [{"keep": "{{ n > 1 }}", "reason": "one", "threshold": None}],
        }
    ]
    loaded = dd.DataDesignerConfigBuilder.from_config(path)
    assert loaded.build().processors[0].rules[0].reason == "one"


def test_datadesigner_discovers_the_plugin():
    from bashgym_designer.filters.plugin import filter_plugin
    from data_designer.engine.testing.utils import assert_valid_plugin
    from data_designer.plugins.plugin import PluginType
    from data_designer.plugins.registry import PluginRegistry

    names = {ep.value for ep in entry_points(group="data_designer.plugins")}
    assert "bashgym_designer.filters.plugin:filter_plugin" in names
    assert_valid_plugin(filter_plugin)
    assert "bashgym-filter" in PluginRegistry().get_plugin_names(PluginType.PROCESSOR)


def test_unused_plugin_leaves_other_configs_alone(tmp_path, settings):
    builder = scored_builder([2, 3])
    result = generate(builder, num_records=2, run_dir=tmp_path, settings=settings)
    assert sorted(result.dataset["n"]) == [2, 3]
    assert read_drops(result.artifact_dir) == []


def test_filters_an_llm_judge_column(scripted_models):
    import data_designer.config as dd

    server = scripted_models.server
    server.add_rule(
        r"Rate this answer: bad",
        '```json\n{"correctness": {"reasoning": "wrong", "score": 1}}\n```',
    )
    server.add_rule(
        r"Rate this answer:",
        '```json\n{"correctness": {"reasoning": "right", "score": 5}}\n```',
    )
    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder([model_config(run.models.resolve("judge"))])
        builder.with_seed_dataset(seed_frame(pd.DataFrame({"answer": ["good", "bad", "fine"]})))
        builder.add_column(
            dd.LLMJudgeColumnConfig(
                name="quality",
                prompt="Rate this answer: {{ answer }}",
                model_alias="judge",
                scores=[
                    dd.Score(
                        name="correctness",
                        description="Is it right?",
                        options={5: "right", 1: "wrong"},
                    )
                ],
            )
        )
        add_filter(
            builder,
            "judge",
            [FilterRule(keep="{{ quality.correctness.score >= 3 }}", reason="correctness below 3")],
        )
        result = generate(
            builder,
            num_records=3,
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    assert sorted(result.dataset["answer"]) == ["fine", "good"]
    [drop] = read_drops(result.artifact_dir)
    assert drop.reason == "correctness below 3" and drop.row["answer"] == "bad"
    assert drop.row["quality"]["correctness"] == {"reasoning": "wrong", "score": 1}
