"""What a user may write for the `from-external` pipeline (`--set pipeline.KEY=VALUE`)."""

from __future__ import annotations

from typing import Literal

from bashgym_designer.rubrics import JudgedPipelineOptions, thresholds_field
from pydantic import Field, field_validator

RUBRIC = "instruction-response"  # the rubric the pipeline judges with
ROLES = ("instruction", "context", "reference_answer", "system_prompt")
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful, knowledgeable assistant. Answer accurately and completely, follow every "
    "instruction and constraint in the request, and be concise."
)


class FromExternalOptions(JudgedPipelineOptions):
    model: str = Field(default="default", description="Model alias that writes the responses.")
    mapping: dict[str, str] = Field(
        default_factory=dict,
        description="Seed column per role (instruction, context, reference_answer, "
        "system_prompt), e.g. {instruction = 'question'}; roles left out are auto-detected "
        "from common column names.",
    )
    reference: Literal["improve", "ignore", "keep"] = Field(
        default="improve",
        description="What to do with a row's reference answer: improve (rewrite it into a "
        "better response), ignore (write a fresh response), keep (use it as the response "
        "and only judge it).",
    )
    system_prompt: str = Field(
        default=DEFAULT_SYSTEM_PROMPT,
        description="System prompt for writing responses and of every row (a mapped "
        "system_prompt column wins where it has a value).",
    )
    thresholds: dict[str, int] = thresholds_field(RUBRIC)

    @field_validator("mapping")
    @classmethod
    def _known_roles(cls, mapping: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(mapping) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}: use {', '.join(ROLES)}")
        empty = sorted(role for role, column in mapping.items() if not column.strip())
        if empty:
            raise ValueError(f"role(s) {empty} map to an empty column name")
        return mapping
