"""The `llm-rubric` judge's options: checked when read, with messages naming what is known."""

from __future__ import annotations

import pytest
from bashgym_judges_llm_rubric import LlmRubricOptions
from pydantic import ValidationError


def test_options_are_checked_with_helpful_messages():
    assert LlmRubricOptions().rubric == "instruction-response"
    with pytest.raises(ValidationError, match=r"unknown rubric 'code'.*coding-solution"):
        LlmRubricOptions(rubric="code")
    with pytest.raises(ValidationError, match="'tool_usage', not criteria of rubric"):
        LlmRubricOptions(thresholds={"tool_usage": 4})
    assert LlmRubricOptions(rubric="coding-solution", thresholds={"tool_usage": 4})
    with pytest.raises(ValidationError, match=r"unknown option|Extra inputs"):
        LlmRubricOptions(rubrik="groundedness")
    for name, field in LlmRubricOptions.model_fields.items():
        assert field.description, name
