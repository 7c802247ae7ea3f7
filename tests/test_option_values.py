"""Every plugin's options refuse `inf` and `nan` (a limit left out is no limit), and a bad value
is quoted in the one-line message."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from bashgym.contracts import Options
from bashgym.text import explain_validation


class Limits(Options):
    timeout_s: float | None = Field(default=None, gt=0)
    memory_mb: int = 1024


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", float("inf"), 1e999])
def test_non_finite_numbers_are_refused(value):
    with pytest.raises(ValidationError) as caught:
        Limits(timeout_s=value)
    assert "timeout_s" in explain_validation(caught.value)


def test_the_message_quotes_what_was_given():
    with pytest.raises(ValidationError) as caught:
        Limits(memory_mb="abc")
    assert explain_validation(caught.value) == (
        "memory_mb: Input should be a valid integer, unable to parse string as an integer "
        "(got 'abc')"
    )
    with pytest.raises(ValidationError) as caught:
        Limits(colour="red")
    assert explain_validation(caught.value) == "colour: unknown option"


def test_finite_values_and_none_still_pass():
    assert Limits(timeout_s="2.5").timeout_s == 2.5 and Limits().timeout_s is None


def test_condense_keeps_an_options_dashes_and_drops_box_rules_and_bullets():
    """A boxed library error becomes one line; `--set` stays `--set` (it was cut to `set`)."""
    from bashgym.text import condense

    boxed = ["--set trainer.x: bad value", "-------", "| - first reason |", "🛑 Error: x", "|---|"]
    assert condense(boxed) == "--set trainer.x: bad value first reason Error: x"
    assert condense(["----- box -----", "a-b -c"]) == "box a-b -c"
