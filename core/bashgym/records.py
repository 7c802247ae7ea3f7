"""The records plugins exchange: Trace, Message, ToolCall, Usage, Task, WorkerResult, Completed.

One Trace shape for every agent run, whatever produced it (a transcript, a rollout, `claude -p`,
the student loop), so sinks and pipelines never care where work came from. Messages are
OpenAI-style, the de-facto training format. Pydantic models: validated on the way in, JSON on the
way out, unknown producer fields kept in `extra` (lossless)."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
# a timeout or a budget: "no limit" is None, never inf (1e999 and "inf" parse as floats), 0 or less
Limit = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO 8601 timestamp as producers write it (`...Z` included), or None if it is not one:
    transcripts are untrusted input and a bad stamp must not lose the message."""
    with suppress(ValueError):
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    return None


class ToolCall(_Record):
    """One function call of an assistant turn; `arguments` is JSON text, as OpenAI sends it."""

    id: str
    name: str
    arguments: str = "{}"

    def arguments_dict(self) -> dict[str, Any]:
        """Parsed arguments; a non-object or unparseable payload comes back under `_raw`."""
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return {"_raw": self.arguments}
        return value if isinstance(value, dict) else {"_raw": value}

    def to_openai(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


class Message(_Record):
    """One chat message; `reasoning` keeps thinking text apart from what the model said."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: str | None = None
    timestamp: datetime | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat message (the SFT line shape)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


class ToolSchema(_Record):
    """A tool the agent could call, in OpenAI function shape (name, description, JSON schema)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        fn = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": fn}


class Usage(_Record):
    """Token counts for a run; cache tokens apart because they are priced apart."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return sum(self.model_dump().values())

    def __add__(self, other: Usage) -> Usage:
        """Field by field, so a token kind added later is summed without touching this."""
        return Usage(**{k: v + getattr(other, k) for k, v in self.model_dump().items()})


class Timing(_Record):
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_s: float | None = None


class Outcome(_Record):
    """How the run ended: `success` is None when the producer did not say."""

    success: bool | None = None
    error_kind: str | None = None  # e.g. max_turns, max_budget, timeout, permission_denied, crash
    error_message: str | None = None
    num_turns: int | None = None


class Provenance(_Record):
    """Where a trace came from, precise enough to find the original bytes again."""

    source: str | None = None  # plugin name that produced it (claude-code, codex, atif, executor…)
    source_file: str | None = None
    line: int | None = None
    session_id: str | None = None
    agent: str | None = None  # agent product, e.g. claude-code
    agent_version: str | None = None
    model: str | None = None
    executor: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    parent_session_id: str | None = None  # set on subagent traces
    extra: dict[str, Any] = Field(default_factory=dict)


class Trace(_Record):
    """One agent run, normalized. `system_prompt` and `tools` are always carried: datasets
    without them are the top complaint about agent training data (shared/reference/peers.md)."""

    id: str
    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSchema] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    timing: Timing = Field(default_factory=Timing)
    outcome: Outcome = Field(default_factory=Outcome)
    provenance: Provenance = Field(default_factory=Provenance)
    subagents: list[Trace] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)

    def openai_messages(self) -> list[dict[str, Any]]:
        """System prompt first (when known), then every message, in OpenAI chat shape. Leading
        system messages are what the system prompt stands for; later ones (Codex's developer
        instructions sent mid-session) stay where they were."""
        if not self.system_prompt:
            return [m.to_openai() for m in self.messages]
        body = list(self.messages)
        while body and body[0].role == "system":
            body.pop(0)
        return [{"role": "system", "content": self.system_prompt}, *(m.to_openai() for m in body)]

    def openai_tools(self) -> list[dict[str, Any]]:
        return [tool.to_openai() for tool in self.tools]

    @property
    def tool_call_count(self) -> int:
        return sum(len(m.tool_calls) for m in self.messages)


class Task(_Record):
    """A unit of coding work: what to do. Its limits are its executor's options and the run's."""

    id: str
    prompt: str
    depends_on: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


Status = Literal["success", "failed", "timeout", "budget", "denied", "error"]


class WorkerResult(_Record):
    """What an executor hands back: the Trace of the work and how it ended. A failed task is a
    status with a reason, never an exception: `failed` (gave up, checks failed), `timeout`,
    `budget`, `denied` (a permission refused), `error` (the executor broke). Usage and cost are
    the Trace's, read through properties, so they are never counted twice."""

    task_id: str
    executor: str
    status: Status
    reason: str | None = None
    trace: Trace
    final_text: str = ""
    duration_s: float | None = None
    workspace: str | None = None  # where the work is, when it was kept
    branch: str | None = None
    commit: str | None = None

    @classmethod
    def failed(cls, task: Task, executor: str, status: Status, reason: str) -> WorkerResult:
        """The result of a task that produced no trace of its own."""
        outcome = Outcome(success=False, error_kind=status, error_message=reason)
        trace = Trace(
            id=task.id,
            messages=[Message(role="user", content=task.prompt)],
            outcome=outcome,
            provenance=Provenance(source="executor", executor=executor),
        )
        return cls(task_id=task.id, executor=executor, status=status, reason=reason, trace=trace)

    @property
    def success(self) -> bool:
        return self.status == "success"

    @property
    def usage(self) -> Usage:
        return self.trace.usage

    @property
    def cost_usd(self) -> float | None:
        return self.trace.cost_usd


@dataclass
class Completed:
    """How a command ended: its exit code (None if it was stopped), output and why it stopped
    (what an environment session's `run` returns; `bashgym_procs.run` makes one)."""

    exit_code: int | None
    output: str
    reason: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class DroppedRow:
    """A row that did not make it, who dropped it and why (kept whole for the report)."""

    by: str  # e.g. "filter quality-thresholds", "judge llm-rubric"
    reason: str
    row: dict[str, Any]


TRACE_COLUMN = "trace"


def trace_to_row(trace: Trace) -> dict[str, Any]:
    """A Trace as one dataset row: flat columns to filter and group by, plus the whole Trace as
    JSON text under `trace` (lossless, and Parquet-safe whatever shape `extra` dicts take)."""
    prov = trace.provenance
    return {
        "trace_id": trace.id,
        "session_id": prov.session_id,
        "source": prov.source,
        "source_file": prov.source_file,
        "project": prov.cwd,
        "model": prov.model,
        "started_at": trace.timing.started_at.isoformat() if trace.timing.started_at else None,
        "success": trace.outcome.success,
        "num_messages": len(trace.messages),
        "num_tool_calls": trace.tool_call_count,
        "num_subagents": len(trace.subagents),
        "input_tokens": trace.usage.input_tokens,
        "output_tokens": trace.usage.output_tokens,
        "cost_usd": trace.cost_usd,
        TRACE_COLUMN: _remember(trace.model_dump_json(exclude_defaults=True), trace),
    }


def trace_from_row(row: Mapping[str, Any]) -> Trace:
    """The Trace a `trace_to_row` row carries: while its text is unchanged (not scrubbed since)
    and among the last ~3 MiB made, the very object it was made from (shared: never change it in
    place; parsing it back was a tenth of a streamed run, measured), else parsed."""
    text = row[TRACE_COLUMN]
    made = _made.get((len(text), text[:99])) if isinstance(text, str) else None
    return made[1] if made is not None and made[0] == text else Trace.model_validate_json(text)


_made: OrderedDict[tuple[int, str], tuple[str, Trace]] = OrderedDict()  # oldest first
_made_chars = [0]


def _remember(text: str, trace: Trace, most: int = 3 << 20) -> str:
    old = _made.pop(key := (len(text), text[:99]), ("",))  # back in as the newest
    _made[key], _made_chars[0] = (text, trace), _made_chars[0] + len(text) - len(old[0])
    while _made_chars[0] > most and len(_made) > 1:
        _made_chars[0] -= len(_made.popitem(last=False)[1][0])
    return text
