"""What a user may write for the `from-unstructured` pipeline (`--set pipeline.KEY=VALUE`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bashgym.contracts import PipelineOptions

QUESTION_TYPES = ["factual", "conceptual", "how-to", "troubleshooting", "comparison"]


class FromUnstructuredOptions(PipelineOptions):
    model: str = Field(default="default", description="Model alias that writes Q&A pairs.")
    judge_model: str = Field(default="judge", description="Model alias that judges them.")
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
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Sampling temperature for the writer (default: the alias's own).",
    )
    thresholds: dict[str, int] = Field(
        default_factory=dict,
        description="Minimum judge score per groundedness criterion (groundedness, relevance); "
        "default: the rubric's thresholds.",
    )
    drop_below: bool = Field(
        default=True, description="Drop rows scoring below a threshold (else keep the scores)."
    )

    @model_validator(mode="after")
    def _check(self) -> FromUnstructuredOptions:
        for name in ("question_types", "difficulties"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        return self
