"""What a user may write for the `tool-use-sft` pipeline (`--set pipeline.KEY=VALUE`)."""

from __future__ import annotations

from bashgym_designer.rubrics import JudgedPipelineOptions, thresholds_field
from pydantic import Field, model_validator

RUBRIC = "tool-use"  # the rubric the pipeline judges with
DEFAULT_SYSTEM_PROMPT = (
    "You are a coding assistant working in the user's repository. You can call the tools "
    "provided to read and change files, search code, run commands and fetch documentation. "
    "Use them to check facts instead of guessing, then answer the user concisely."
)
DOMAINS = [
    "a Python web backend (FastAPI, SQLAlchemy)",
    "a TypeScript React frontend",
    "a data pipeline (pandas, SQL)",
    "a Go command-line tool",
    "CI and Docker infrastructure",
    "a Rust library",
    "a PyTorch training script",
    "a Node.js REST API",
]
SCENARIOS = [
    "fix a failing unit test",
    "track down a bug from an error message or stack trace",
    "add a small feature",
    "explain how part of the codebase works",
    "refactor a function or module",
    "upgrade or pin a dependency",
    "investigate a failing CI job",
    "look up an API's documentation and apply it",
    "find where something is defined or used",
    "change a configuration setting",
]


class ToolUseOptions(JudgedPipelineOptions):
    model: str = Field(default="default", description="Model alias that writes conversations.")
    tools_file: str | None = Field(
        default=None,
        description="JSON file of OpenAI function tools (a list, or {'tools': [...]}) that "
        "replaces the default coding-agent tool set.",
    )
    system_prompt: str = Field(
        default=DEFAULT_SYSTEM_PROMPT, description="System prompt of every training row."
    )
    domains: list[str] = Field(
        default_factory=lambda: list(DOMAINS), description="Project kinds sampled per row."
    )
    scenarios: list[str] = Field(
        default_factory=lambda: list(SCENARIOS), description="Task kinds sampled per row."
    )
    difficulties: list[str] = Field(
        default_factory=lambda: ["easy", "medium", "hard"],
        description="Difficulty levels sampled per row.",
    )
    min_tool_calls: int = Field(default=1, ge=1, description="Fewest tool calls asked for.")
    max_tool_calls: int = Field(default=5, ge=1, le=20, description="Most tool calls asked for.")
    thresholds: dict[str, int] = thresholds_field(RUBRIC)

    @model_validator(mode="after")
    def _check(self) -> ToolUseOptions:
        if self.min_tool_calls > self.max_tool_calls:
            raise ValueError("min_tool_calls must not exceed max_tool_calls")
        for name in ("domains", "scenarios", "difficulties"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        return self
