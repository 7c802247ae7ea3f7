"""What a user may write for the `nemo-jsonl` sink (`--set sink.KEY=VALUE`).

Kept apart from the code that acts on it (the DataDesigner style): this is plain config,
validated by the engine before any work starts, and listed by `bashgym options sink nemo-jsonl`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from bashgym.contracts import Options

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in a software repository. You read and edit files and run "
    "commands with the tools provided, check your work (for example by running the tests), and "
    "finish with a short summary of what you changed."
)

InputShape = Literal["auto", "traces", "chat", "rows", "dpo"]


ToolArguments = Literal["object", "openai-string"]


class NemoJsonlOptions(Options):
    path: str | None = Field(
        default=None,
        description="Output folder for train.jsonl, val.jsonl, manifest.json; "
        "default: RUN_DIR/nemo-jsonl.",
    )
    input: InputShape = Field(
        default="auto",
        description="What the rows are; auto: the run's output format (traces, chat, rows, dpo), "
        "else guessed from the columns (trace, messages, prompt+chosen+rejected, prompt+response).",
    )
    format: Literal["tool-use", "chat"] = Field(
        default="tool-use",
        description="SFT shape: tool-use keeps tool_calls, tool results and the tools schema; "
        "chat keeps only text turns and skips conversations with no final assistant text.",
    )
    # None, not the agent prompt: a Q&A row trained under "You are a coding agent ... finish
    # with a short summary of what you changed" teaches a model to frame every answer that way
    default_system_prompt: str | None = Field(
        default=None,
        description="System prompt for every line whose record carries none, agent or not "
        '("": no system message). Unset: an agent\'s line (a trace, or messages with tool '
        f'calls or a tools schema) gets the coding-agent prompt "{DEFAULT_SYSTEM_PROMPT}"; '
        "any other line (prompt/response, chat or DPO text without tools) gets none.",
    )
    tool_arguments: ToolArguments = Field(
        default="object",
        description="tool_calls[].function.arguments as a JSON object (default: what HF chat "
        "templates such as Qwen2.5's and TRL's SFTTrainer render correctly) or openai-string: "
        "JSON text, as OpenAI's fine-tuning format and API send it (templates that `tojson` "
        "it encode it twice).",
    )
    success_only: bool = Field(
        default=True,
        description="Only traces that succeeded are SFT targets: a failed or errored one (an "
        "executor status other than success, or outcome.success false, e.g. a session ending "
        "on an API error) is dropped with its reason; false: every trace is a target.",
    )
    negatives: bool = Field(
        default=True,
        description="Write the lines of traces success_only drops to negatives.jsonl (not a "
        "split: DPO rejected answers, failure analysis). A trace stopped mid-action (e.g. for "
        "repetition) is cut after its last assistant turn, which may end on tool calls with no "
        "result (manifest negatives.cut_short); one that no such cut makes a valid conversation "
        "(an earlier break, or format=chat with no final text) writes no line and is counted "
        "by reason (manifest negatives.not_written).",
    )
    mid_conversation_system: Literal["keep", "drop-line"] = Field(
        default="keep",
        description="A system message after the first (Codex's developer instructions sent "
        "mid-session): keep it in place, as OpenAI chat allows and Qwen's or Llama's chat "
        "templates render; drop-line drops the line with its reason, for a template that "
        "refuses one.",
    )
    include_subagents: bool = Field(
        default=False,
        description="Also write each trace's subagent conversations as lines of their own "
        "(in the parent's split).",
    )
    prompt_field: str = Field(default="prompt", description="Prompt column for rows and DPO.")
    response_field: str = Field(default="response", description="Response column for rows.")
    dpo_format: Literal["trl", "trl-conversational", "nemo-rl", "nemo-rl-rank"] = Field(
        default="trl",
        description="Preference shape: trl / nemo-rl {prompt, chosen, rejected} as text; "
        "trl-conversational as message lists; nemo-rl-rank {context, completions[rank]}.",
    )
    chosen_score_field: str = Field(default="chosen_score", description="Score of `chosen`.")
    rejected_score_field: str = Field(default="rejected_score", description="Score of `rejected`.")
    min_margin: float | None = Field(
        default=None,
        ge=0,
        description="When scores are present keep a pair only if chosen - rejected >= this; "
        "unset: chosen must score strictly higher (a tie is no signal).",
    )
    keep_fields: list[str] = Field(
        default_factory=list,
        description="Row columns copied into every line as-is (e.g. trace_id), for traceability.",
    )
    val_fraction: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of records in val.jsonl (by id hash); with 2 or more records neither "
        "file is left empty, with 1 (or 0 here) there is no val.jsonl and the manifest says so.",
    )
    seed: int | None = Field(default=None, description="Split seed; default: the run's seed.")

    @field_validator("tool_arguments", mode="before")
    @classmethod
    def _old_name(cls, value: Any) -> Any:
        """`json-string`, the name before `openai-string`, in run files written then."""
        return "openai-string" if value == "json-string" else value

    id_field: str | None = Field(
        default=None,
        description="Column with a stable record id; default: trace_id, id or record_id, "
        "else a hash of the row's content.",
    )
