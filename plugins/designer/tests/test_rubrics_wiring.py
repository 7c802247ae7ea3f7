"""`add_rubric_judge` and `JudgedPipelineOptions`: the wiring the judged pipelines share."""

from __future__ import annotations

from bashgym_designer.filters import FilterRule
from bashgym_designer.rubrics import (
    JudgedPipelineOptions,
    add_rubric_judge,
    get_rubric,
    thresholds_field,
    writer_builder,
)

RUBRIC = get_rubric("instruction-response")


class _Options(JudgedPipelineOptions):
    thresholds: dict[str, int] = thresholds_field("instruction-response")


def test_caller_rules_come_first_then_thresholds_in_the_named_filter(scripted_models):
    import data_designer.config as dd

    run = scripted_models.run_context()
    options = _Options(temperature=0.3, thresholds={"correctness": 4})
    with run.models:
        builder = writer_builder(run, options)
        own = FilterRule(keep="{{ prompt }}", reason="empty prompt")
        skip = dd.SkipConfig(when="{{ not prompt }}")
        add_rubric_judge(
            builder,
            run,
            column="verdict",
            rubric=RUBRIC,
            skip=skip,
            filter_name="my-pipeline",
            keep_rules=[own],
            **options.judge_settings(),
        )
        assert [c.alias for c in builder.model_configs] == ["default", "judge"]
        assert builder.model_configs[0].inference_parameters.temperature == 0.3
        judge = builder.get_column_config("verdict")
        assert judge.model_alias == "judge" and judge.skip == skip
        (processor,) = builder.get_processor_configs()
        assert processor.name == "my-pipeline"
        assert [r.reason for r in processor.rules] == [
            "empty prompt",
            "instruction-response: helpfulness below 3",
            "instruction-response: correctness below 4",
        ]


def test_one_alias_writing_and_judging_keeps_one_config_and_no_drop_keeps_caller_rules(
    scripted_models,
):
    run = scripted_models.run_context()
    options = _Options(judge_model="default", drop_below=False)
    with run.models:
        builder = writer_builder(run, options)
        own = FilterRule(keep="{{ prompt }}", reason="empty prompt")
        add_rubric_judge(
            builder,
            run,
            column="verdict",
            rubric=RUBRIC,
            keep_rules=[own],
            **options.judge_settings(),
        )
        assert [c.alias for c in builder.model_configs] == ["default"]
        (processor,) = builder.get_processor_configs()
        assert processor.name == "verdict-thresholds"
        assert [r.reason for r in processor.rules] == ["empty prompt"]


def test_thresholds_field_names_the_rubric_criteria():
    described = _Options.model_fields["thresholds"].description
    assert described.startswith("Minimum judge score per instruction-response criterion")
    assert "(helpfulness, correctness)" in described
    assert _Options().thresholds == {}
