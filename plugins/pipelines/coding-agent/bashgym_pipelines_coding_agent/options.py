"""What a user may write for the coding-agent pipelines (`--set pipeline.KEY=VALUE`).

Plain config, kept apart from the code that acts on it. `CodingAgentOptions` is shared with the
coding-agent-dpo pipeline (which imports it), `SftOptions` adds what only SFT needs.

The sampler defaults are what a coding-agent dataset needs to not collapse onto one kind of
task: bug fixes and features dominate real agent sessions, so they weigh most; Python leads the
languages because it dominates agent traffic and because its code is what ruff can check;
large codebases are rarer in weight since a generated task cannot show much of one.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from bashgym.contracts import PipelineOptions

# column -> {value: weight}; dict order is the order the task prompt lists them.
DEFAULT_SAMPLERS: dict[str, dict[str, float]] = {
    "task_category": {
        "bug fix": 4,
        "feature": 4,
        "refactor": 2,
        "tests": 2,
        "performance": 1,
        "docs": 1,
    },
    "complexity": {
        "simple: one focused change in one place": 3,
        "moderate: a few related changes across two or three files": 4,
        "complex: investigation first, then changes across several modules": 2,
    },
    "language": {
        "python": 6,
        "typescript": 2,
        "javascript": 1,
        "go": 1,
        "rust": 1,
        "java": 1,
        "bash": 1,
    },
    "codebase_size": {
        "a single script": 1,
        "a small project (under 20 files)": 4,
        "a medium project (20-200 files)": 3,
        "a large codebase or monorepo (200+ files)": 1,
    },
    "project_domain": {
        "web API service": 3,
        "command-line tool": 2,
        "data processing pipeline": 2,
        "reusable library": 2,
        "web frontend": 1,
        "infrastructure and deployment scripts": 1,
        "machine learning training code": 1,
    },
}

# Columns the pipelines create themselves (the seed's columns are reduced to seed_*).
RESERVED = frozenset(
    {"record_id", "task_prompt", "trajectory", "quality", "seed_task", "seed_id", "seed_source"}
    | {f"{p}_{s}" for p in ("solution", "judge", "score") for s in ("a", "b")}
    | {"chosen", "rejected", "chosen_side", "chosen_score", "rejected_score", "score_margin"}
)


class CodingAgentOptions(PipelineOptions):
    model: str = Field(
        default="default", description="Model alias that writes the tasks and the solutions."
    )
    judge_model: str = Field(default="judge", description="Model alias that judges solutions.")
    categories: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Sampler columns: column = list of values. Replaces the values of a built-in "
        f"column ({', '.join(DEFAULT_SAMPLERS)}) or adds a new dimension to the task prompt.",
    )
    weights: dict[str, list[float]] = Field(
        default_factory=dict,
        description="Weights per sampler column, one per value; default: the built-in weights "
        "for built-in values, uniform for values you give.",
    )
    task_temperature: float = Field(
        default=0.9, ge=0, le=2, description="Temperature for writing task prompts (diversity)."
    )
    task_max_tokens: int = Field(
        default=1024, ge=64, description="Token limit for one task prompt."
    )
    max_tokens: int = Field(
        default=8192, ge=256, description="Token limit for one solution trajectory."
    )
    max_steps: int | None = Field(
        default=None,
        ge=1,
        description="Most tool calls in one solution, enforced by the output schema (keeps a "
        "small local model's answers short); default: no limit.",
    )
    judge_max_tokens: int = Field(
        default=2048, ge=128, description="Token limit for one judge verdict."
    )
    frequency_penalty: float | None = Field(
        default=None,
        ge=-2.0,
        le=2.0,
        description="OpenAI's frequency_penalty on every request of the pipeline (a small local "
        "model then stops repeating itself instead of looping until max_tokens); default: none.",
    )
    lint_python_files: int = Field(
        default=3,
        ge=0,
        le=8,
        description="How many Python files a solution writes are checked with ruff (one column "
        "each); a solution whose checked file fails is dropped. 0: no ruff check.",
    )
    seed_column: str | None = Field(
        default=None,
        description="Seed column holding the task to draw on: text, a `trace` (Claude Code / "
        "Codex row) or a `messages` list; default: the first of task, prompt, instruction, "
        "question, query, request, trace, messages.",
    )
    system_prompt: str | None = Field(
        default=None,
        description="System prompt of the training rows; default: a coding-agent prompt "
        "naming the tools.",
    )

    def samplers(self) -> dict[str, tuple[list[str], list[float] | None]]:
        """Every sampler column with its values and weights (None: uniform)."""
        out: dict[str, tuple[list[str], list[float] | None]] = {}
        for column in dict.fromkeys([*DEFAULT_SAMPLERS, *self.categories]):
            default = DEFAULT_SAMPLERS.get(column, {})
            values = self.categories.get(column, list(default))
            weights = self.weights.get(column)
            if weights is None and values == list(default):
                weights = list(default.values())
            out[column] = (values, weights)
        return out

    @model_validator(mode="after")
    def _check_samplers(self) -> CodingAgentOptions:
        for column, values in self.categories.items():
            if column in RESERVED:
                raise ValueError(f"sampler column {column!r} clashes with a pipeline column")
            if not column.isidentifier():
                raise ValueError(f"sampler column {column!r} must be an identifier (a_z_0_9)")
            if not values:
                raise ValueError(f"sampler column {column!r} has no values")
        samplers = self.samplers()
        unknown = sorted(set(self.weights) - set(samplers))
        if unknown:
            raise ValueError(f"weights for unknown sampler column(s) {unknown}")
        for column, (values, weights) in samplers.items():
            if weights is not None and len(weights) != len(values):
                raise ValueError(
                    f"sampler column {column!r} has {len(values)} values but {len(weights)} weights"
                )
        return self


class SftOptions(CodingAgentOptions):
    temperature: float = Field(
        default=0.7, ge=0, le=2, description="Temperature for writing solutions."
    )
    thresholds: dict[str, int] = Field(
        default_factory=dict,
        description="Lowest judge score kept per criterion of the coding-solution rubric "
        "(correctness, tool_usage, completeness); default: the rubric's own (3 of 5).",
    )
