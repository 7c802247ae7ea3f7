"""Column roles: the user's mapping, auto-detection of common names, and clear errors."""

from __future__ import annotations

import pandas as pd
import pytest
from bashgym_pipelines_from_external.mapping import check_columns, resolve_mapping
from bashgym_pipelines_from_external.options import FromExternalOptions
from pydantic import ValidationError

from bashgym.contracts import InputError


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (  # Alpaca: `input` is the context when an instruction column exists
            ["instruction", "input", "output"],
            {"instruction": "instruction", "context": "input", "reference_answer": "output"},
        ),
        (  # Dolly
            ["instruction", "context", "response", "category"],
            {"instruction": "instruction", "context": "context", "reference_answer": "response"},
        ),
        (["Question", "Answer", "id"], {"instruction": "Question", "reference_answer": "Answer"}),
        (["input", "output"], {"instruction": "input", "reference_answer": "output"}),
        (
            ["system", "prompt", "completion"],
            {"instruction": "prompt", "reference_answer": "completion", "system_prompt": "system"},
        ),
    ],
)
def test_common_column_names_are_detected(columns, expected):
    assert resolve_mapping(columns, {}) == expected


def test_an_explicit_mapping_wins_and_the_rest_is_detected():
    mapping = resolve_mapping(["title", "body", "answer"], {"instruction": "body"})
    assert mapping == {"instruction": "body", "reference_answer": "answer"}
    # A column serves one role only: mapped as context, `input` is not also the instruction.
    mapping = resolve_mapping(["ask", "input"], {"instruction": "ask", "context": "input"})
    assert mapping == {"instruction": "ask", "context": "input"}


def test_mapping_errors_name_the_seed_columns():
    with pytest.raises(InputError) as err:
        resolve_mapping(["title", "body", "label"], {})
    message = str(err.value)
    assert "no instruction column among the seed's columns ['title', 'body', 'label']" in message
    assert "--set pipeline.mapping.instruction=COLUMN" in message
    with pytest.raises(InputError, match=r"mapping.context names column 'ctx', but the seed's "):
        resolve_mapping(["question", "answer"], {"context": "ctx"})
    with pytest.raises(ValidationError, match=r"unknown role\(s\) \['prompt'\]"):
        FromExternalOptions(mapping={"prompt": "q"})
    with pytest.raises(ValidationError, match="map to an empty column name"):
        FromExternalOptions(mapping={"instruction": " "})


def test_mapped_columns_must_hold_text_and_be_template_names():
    seed = pd.DataFrame({"question": ["a", None], "messages": [[{"role": "user"}], []]})
    check_columns(seed, {"instruction": "question"})  # missing values are fine
    with pytest.raises(InputError, match="'messages' \\(instruction\\) must hold text, but holds"):
        check_columns(seed, {"instruction": "messages"})
    spaced = pd.DataFrame({"the question": ["a"]})
    with pytest.raises(InputError, match="cannot be read in a template"):
        check_columns(spaced, {"instruction": "the question"})


def test_every_option_is_described():
    assert all(f.description for f in FromExternalOptions.model_fields.values())
