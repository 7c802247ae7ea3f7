"""What a rubric is: named criteria, each a 1-5 scale with a description per level.

Rubrics are plain pydantic config (the DataDesigner style: config apart from the code acting on
it), so a user can write one in TOML and a pipeline can ship its own. The checks here exist
because each mistake would otherwise surface far away: a criterion name that is not an
identifier breaks `{{ quality.<name>.score }}` in every filter and expression; a string score
key comes back from the judge as a string and makes `score >= 3` fail; a threshold outside the
scale keeps or drops every row without saying so.
"""

from __future__ import annotations

import keyword

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# On a 1-5 scale, 3 means "acceptable: right in substance, with minor flaws". Keeping >= 3 drops
# answers a judge calls wrong or unhelpful, while tolerating the one-point noise LLM judges show
# between runs; a default of 4 would throw away many good rows on a strict judge's whim.
DEFAULT_THRESHOLD = 3


class Criterion(BaseModel):
    """One scored dimension: what it measures and what each integer score means."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Identifier used as the score's key: quality.<name>.score.")
    description: str = Field(min_length=1, description="What the judge assesses, and how.")
    options: dict[int, str] = Field(
        description="Score -> what a response earning it looks like (int keys, e.g. 1..5)."
    )
    threshold: int = Field(
        default=DEFAULT_THRESHOLD, description="Lowest score a row may have and be kept."
    )

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(
                f"criterion name {name!r} must be a Python identifier (letters, digits, _), "
                "since it is read as quality.<name>.score in Jinja"
            )
        return name

    @field_validator("options", mode="before")
    @classmethod
    def _int_keys(cls, options: object) -> object:
        """TOML and JSON keys are always strings: accept "5" but store 5, refuse "good"."""
        if not isinstance(options, dict):
            return options
        out: dict[int, object] = {}
        for key, text in options.items():
            if isinstance(key, bool) or not str(key).strip().lstrip("-").isdigit():
                raise ValueError(f"score option {key!r} must be an integer (e.g. 1..5)")
            out[int(key)] = text
        return out

    @model_validator(mode="after")
    def _threshold_on_scale(self) -> Criterion:
        if len(self.options) < 2:
            raise ValueError(f"criterion {self.name!r} needs at least two score options")
        check_threshold(self, self.threshold)
        return self

    @property
    def scale(self) -> tuple[int, int]:
        return min(self.options), max(self.options)


def check_threshold(criterion: Criterion, threshold: int) -> None:
    """Raise ValueError unless `threshold` lies on the criterion's scale."""
    low, high = criterion.scale
    if not low <= threshold <= high:
        raise ValueError(
            f"threshold {threshold} for {criterion.name!r} is outside its scale {low}..{high}"
        )


class Rubric(BaseModel):
    """A named set of criteria plus the instructions that frame the judge's task."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The rubric's name, used in drop reasons.")
    description: str = Field(description="One line: what kind of rows this rubric judges.")
    instructions: str = Field(description="Who the judge is and how to judge; heads the prompt.")
    criteria: list[Criterion] = Field(min_length=1, description="The scored dimensions.")

    @model_validator(mode="after")
    def _unique(self) -> Rubric:
        names = [c.name for c in self.criteria]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"rubric {self.name!r} repeats criteria {duplicates}")
        return self

    def criterion(self, name: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.name == name:
                return criterion
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.criteria]
