"""What a user writes for the student executor (plain config, no behaviour)."""

from __future__ import annotations

from pydantic import Field

from bashgym.contracts import Options

SYSTEM_PROMPT = """\
You are a coding agent working in a project folder. Use the tools to read files, write or edit \
them, and run commands; paths are relative to the project folder. Call tools until the task is \
done. A tool's result only tells you what happened: never write it into a file. When the task is \
done, reply with a one-line summary and call no tool."""


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
    model_retries: int | None = Field(
        default=None,
        ge=0,
        description="Tries after a model call's first that failed for a transient reason "
        "(refused or lost connection, timeout, 429, 5xx, a body that is not JSON); default: the "
        "alias's params.max_retries, else 4.",
    )
    retry_wait_s: float = Field(
        default=1.0,
        gt=0,
        description="Wait before the first retry; doubled for each next one (at most 30 s; a "
        "server's Retry-After is honoured within that).",
    )
    repeat_limit: int = Field(
        default=3,
        ge=2,
        description="Stop (status failed, repetition) when the model makes the same tool "
        "call(s) this many turns in a row, or one call this many times in one reply.",
    )
    text_tool_calls: bool = Field(
        default=True,
        description="Read a tool call the model wrote as JSON text instead of as a call "
        '({"name": "write_file", "arguments": {...}}, in a fence or <tool_call> tags, a brace '
        "short: small models do) as that call; the trace records it as a call and counts it "
        "(extra.tool_calls_from_text). false: such a reply ends the task as its final answer.",
    )
    max_tokens: int | None = Field(
        default=1024,
        ge=1,
        description="Tokens per model answer (None: the alias's): a tool call or a summary is "
        "short, and a small local model stuck repeating itself must not run for minutes.",
    )
