"""What a user may write for coding-agent-dpo: the shared coding-agent options, plus how the two
solutions differ and how far apart their scores must be.

Defaults: one model at 0.2 and 1.0. A cool sample is usually the careful answer and a hot one
the sloppier one, which yields real preference signal without a second model; giving `model_b`
compares two models instead. A margin of 2 points (of 3-15 on the coding-solution rubric) keeps
pairs where the judge clearly prefers one side: a 1-point gap is within an LLM judge's noise.
"""

from __future__ import annotations

from pydantic import Field

from bashgym_pipelines_coding_agent.options import CodingAgentOptions


class DpoOptions(CodingAgentOptions):
    temperature: float = Field(
        default=0.2, ge=0, le=2, description="Temperature of solution A (with `model`)."
    )
    model_b: str | None = Field(
        default=None, description="Model alias for solution B; default: the same as `model`."
    )
    temperature_b: float = Field(default=1.0, ge=0, le=2, description="Temperature of solution B.")
    min_margin: int = Field(
        default=2,
        ge=1,
        description="Keep a pair only when the chosen solution's total judge score beats the "
        "rejected one's by at least this much (ties are always dropped).",
    )
    min_chosen_score: int | None = Field(
        default=None,
        ge=0,
        description="Also drop pairs whose chosen solution totals less than this (3-15 on the "
        "coding-solution rubric): a preference between two bad answers teaches little.",
    )
