"""What a user may write for the `from-unstructured` pipeline (`--set pipeline.KEY=VALUE`)."""

from __future__ import annotations

from typing import Literal

from bashgym_designer.rubrics import JudgedPipelineOptions, thresholds_field
from pydantic import Field, model_validator

RUBRIC = "groundedness"  # the rubric the pipeline judges with
QUESTION_TYPES = ["factual", "conceptual", "how-to", "troubleshooting", "comparison"]


class FromUnstructuredOptions(JudgedPipelineOptions):
    model: str = Field(default="default", description="Model alias that writes Q&A pairs.")
    text_column: str = Field(
        default="text", description="Seed column holding the chunk text (the documents source's)."
    )
    question_types: list[str] = Field(
        default_factory=lambda: list(QUESTION_TYPES),
        description="Question kinds sampled per row (factual, conceptual, how-to, "
        "troubleshooting, comparison, or your own labels).",
    )
    difficulties: list[str] = Field(
        default_factory=lambda: ["easy", "medium", "hard"],
        description="Difficulty levels sampled per row.",
    )
    prompt_style: Literal["question", "with-context"] = Field(
        default="question",
        description="question: the prompt is the question alone, written to stand on its own "
        "(teaches the content); with-context: the chunk comes before the question (teaches "
        "reading a given document, RAG style).",
    )
    cite: bool = Field(
        default=True,
        description="Answers end with a 'Source:' line naming the file and lines they rest on.",
    )
    min_chunk_chars: int = Field(
        default=200,
        ge=1,
        description="Chunks shorter than this are not asked about (dropped with a reason).",
    )
    thresholds: dict[str, int] = thresholds_field(RUBRIC)

    @model_validator(mode="after")
    def _check(self) -> FromUnstructuredOptions:
        for name in ("question_types", "difficulties"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        return self
