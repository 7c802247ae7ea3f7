"""What a user writes for the student executor (plain config, no behaviour)."""

from __future__ import annotations

from pydantic import Field

from bashgym.contracts import Options

SYSTEM_PROMPT = """\
You are a coding agent working in a project folder. Use the tools to look at the files, change \
them and run commands; paths are relative to the project folder. Work step by step: call one or \
more tools, read their results, continue. When the task is done, answer with a short summary \
and no tool call."""


class StudentOptions(Options):
    model_alias: str = Field(
        default="student",
        description="Model alias in settings (any provider: embedded, vLLM, OpenAI-compatible, "
        "litellm); an alias not in settings is the default one.",
    )
    system_prompt: str = Field(
        default=SYSTEM_PROMPT, description="The system prompt (a task's own is added to it)."
    )
    max_turns: int = Field(
        default=30, ge=1, description="Model calls per task, unless the task sets its own."
    )
    command_timeout_s: float = Field(
        default=120.0, gt=0, description="Longest a run_command may take (the deadline too)."
    )
    output_limit: int = Field(
        default=20_000, ge=200, description="Characters of one tool result the model sees."
    )
    temperature: float | None = Field(
        default=None, ge=0, description="Sampling temperature; default: the alias's."
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="Tokens per model answer; default: the alias's."
    )
