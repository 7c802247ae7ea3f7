"""Rubric config, judge column, keep rules, totals and score reading: no model calls here."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from bashgym_designer.rubrics import (
    RUBRICS,
    Criterion,
    Rubric,
    get_rubric,
    judge_column,
    scores_of,
    threshold_rules,
    total_score_expr,
)
from data_designer.engine.processing.ginja.environment import UserTemplateSandboxEnvironment
from pydantic import ValidationError

from bashgym.contracts import InputError

EXPECTED = {
    "coding-solution": ["correctness", "tool_usage", "completeness"],
    "instruction-response": ["helpfulness", "correctness"],
    "groundedness": ["groundedness", "relevance"],
    "tool-use": ["tool_choice", "arguments", "final_answer"],
}


def render(template: str, record: dict) -> str:
    """Render the way DataDesigner's expression columns and the filter processor do."""
    env = UserTemplateSandboxEnvironment(allowed_references=list(record))
    env.validate_template(template)
    return env.render_template(template, record)


def test_builtin_rubrics_score_every_level_with_int_keys():
    assert {name: r.names for name, r in RUBRICS.items()} == EXPECTED
    for rubric in RUBRICS.values():
        assert rubric.instructions.strip() and rubric.description.strip()
        for criterion in rubric.criteria:
            assert list(criterion.options) == [5, 4, 3, 2, 1]
            assert all(type(k) is int for k in criterion.options)
            assert all(len(text) > 30 for text in criterion.options.values()), criterion.name
            assert criterion.threshold == 3


def test_unknown_rubric_names_the_known_ones():
    with pytest.raises(InputError, match=r"unknown rubric 'nope'.*coding-solution.*tool-use"):
        get_rubric("nope")


def test_criterion_checks_keys_names_and_thresholds():
    c = Criterion(name="style", description="d", options={"1": "bad", "5": "good"})
    assert c.options == {1: "bad", 5: "good"}  # TOML keys arrive as strings
    with pytest.raises(ValidationError, match="must be an integer"):
        Criterion(name="style", description="d", options={"good": "x", "bad": "y"})
    with pytest.raises(ValidationError, match="must be a Python identifier"):
        Criterion(name="tool-use", description="d", options={1: "a", 5: "b"})
    with pytest.raises(ValidationError, match=r"outside its scale 1..5"):
        Criterion(name="style", description="d", options={1: "a", 5: "b"}, threshold=6)
    crit = Criterion(name="a", description="d", options={1: "x", 2: "y"}, threshold=2)
    with pytest.raises(ValidationError, match="repeats criteria"):
        Rubric(name="r", description="d", instructions="i", criteria=[crit, crit])


def test_judge_column_has_int_scores_and_a_delimited_prompt():
    rubric = get_rubric("coding-solution")
    col = judge_column(
        "quality", rubric, model_alias="judge", prompt_column="task", response_column="answer"
    )
    assert col.column_type == "llm-judge" and col.model_alias == "judge"
    assert [s.name for s in col.scores] == EXPECTED["coding-solution"]
    assert all(type(k) is int for s in col.scores for k in s.options)
    # every level's definition is in the (fixed, cacheable) system prompt, once
    for criterion in rubric.criteria:
        assert f"## {criterion.name}\n{criterion.description}" in col.system_prompt
        for level, text in criterion.options.items():
            assert col.system_prompt.count(f"- {level}: {text}") == 1
    assert "{{" not in col.system_prompt
    assert col.prompt.startswith(rubric.instructions)
    assert "<task>\n{{ task }}\n</task>" in col.prompt
    assert "<response>\n{{ answer }}\n</response>" in col.prompt
    custom = judge_column("q", rubric, model_alias="m", prompt="Rate {{ answer }}")
    assert custom.prompt == "Rate {{ answer }}"
    with pytest.raises(InputError, match="cannot be read in a Jinja template"):
        judge_column("quality-score", rubric, model_alias="judge")


def test_threshold_rules_keep_by_score_and_name_the_criterion():
    rubric = get_rubric("instruction-response")
    rules = threshold_rules("quality", rubric, {"correctness": 4})
    assert [r.reason for r in rules] == [
        "instruction-response: helpfulness below 3",
        "instruction-response: correctness below 4",
    ]
    good = {"quality": {"helpfulness": {"score": 3}, "correctness": {"score": 4}}}
    low = {"quality": {"helpfulness": {"score": 5}, "correctness": {"score": 3}}}
    assert [render(r.keep, good) for r in rules] == ["True", "True"]
    assert [render(r.keep, low) for r in rules] == ["True", "False"]


@pytest.mark.parametrize(
    "cell",
    [
        None,
        "not json",
        {},
        {"helpfulness": None},
        {"helpfulness": {"reasoning": "x"}},
        {"helpfulness": {"score": "high"}},
        {"helpfulness": 7},
    ],
)
def test_a_missing_or_damaged_score_fails_the_rule_instead_of_erroring(cell):
    rule = threshold_rules("quality", get_rubric("instruction-response"))[0]
    assert render(rule.keep, {"quality": cell}) == "False"


def test_threshold_keys_must_be_criteria_and_on_the_scale():
    rubric = get_rubric("groundedness")
    with pytest.raises(InputError, match=r"'accuracy', not criteria.*groundedness, relevance"):
        threshold_rules("quality", rubric, {"accuracy": 3})
    with pytest.raises(InputError, match="threshold 0 for 'relevance' is outside its scale"):
        threshold_rules("quality", rubric, {"relevance": 0})


def test_total_score_expr_sums_scores_and_scales_to_long_rubrics():
    rubric = get_rubric("tool-use")
    cell = {
        name: {"reasoning": "r", "score": s}
        for name, s in zip(rubric.names, [5, 2, 4], strict=True)
    }
    assert render(total_score_expr("quality", rubric), {"quality": cell}) == "11"
    assert render(total_score_expr("quality", rubric), {"quality": {}}) == "0"
    criteria = [
        Criterion(name=f"c{i}", description="d", options={1: "a", 5: "b"}) for i in range(9)
    ]
    wide = Rubric(name="wide", description="d", instructions="i", criteria=criteria)
    cell = {f"c{i}": {"score": i % 5 + 1} for i in range(9)}
    assert render(total_score_expr("q", wide), {"q": cell}) == str(sum(i % 5 + 1 for i in range(9)))


def test_scores_of_reads_dicts_json_and_parquet_round_trips(tmp_path):
    rubric = get_rubric("instruction-response")
    cell = {
        "helpfulness": {"reasoning": "ok", "score": 4},
        "correctness": {"reasoning": "x", "score": 2},
    }
    assert scores_of(cell, rubric) == {"helpfulness": 4, "correctness": 2}
    assert scores_of(json.dumps(cell), rubric) == {"helpfulness": 4, "correctness": 2}
    path = tmp_path / "judged.parquet"
    pd.DataFrame({"quality": [cell]}).to_parquet(path)
    back = pd.read_parquet(path)["quality"][0]
    assert scores_of(back, rubric) == {"helpfulness": 4, "correctness": 2}
    numpy_cell = {"helpfulness": {"score": np.int64(5)}, "correctness": {"score": np.float64(3)}}
    assert scores_of(numpy_cell, rubric) == {"helpfulness": 5, "correctness": 3}
    assert scores_of(np.array([cell])[0], rubric) == {"helpfulness": 4, "correctness": 2}


def test_scores_of_gives_none_for_what_is_not_a_score():
    rubric = get_rubric("instruction-response")
    assert scores_of(None, rubric) == {"helpfulness": None, "correctness": None}
    assert scores_of("no json here", rubric) == {"helpfulness": None, "correctness": None}
    damaged = {"helpfulness": {"score": "4"}, "correctness": {"score": 9}}
    assert scores_of(damaged, rubric) == {"helpfulness": 4, "correctness": None}  # 9: off scale
    assert scores_of({"helpfulness": {"score": True}}, rubric)["helpfulness"] is None
    assert scores_of({"helpfulness": {"score": 3.0}}, rubric)["helpfulness"] == 3
