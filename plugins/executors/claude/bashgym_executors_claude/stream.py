"""Claude Code's stream-json lines → one normalized Trace, built as the lines arrive.

Both executors feed this: claude-cli its stdout lines, agent-sdk the SDK's messages turned back
into the same dicts (`sdk.as_stream`). The traps it handles (shared/reference/claude-code.md):
one API response is written as several `assistant` lines, one content block each, sharing
`message.id` and repeating its usage — they merge into one message and count once; subagent
lines carry `parent_tool_use_id` and go to a subagent Trace of their own; an API failure is
reported as a `<synthetic>` assistant message, which is the CLI speaking, not the model, so it
goes to `outcome.error_message` and never into the training messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bashgym_claude_tools import schemas

from bashgym.records import (
    Message,
    Outcome,
    Provenance,
    Timing,
    ToolCall,
    Trace,
    Usage,
    parse_timestamp,
)

SYNTHETIC_MODEL = "<synthetic>"


def _calls(messages: list[Message]) -> list[ToolCall]:
    """Every tool call of `messages`: a tool Claude Code does not describe gets its schema
    inferred from them."""
    return [call for message in messages for call in message.tool_calls]


def usage_of(raw: dict[str, Any] | None) -> Usage:
    """Anthropic `usage` (snake case) as a Usage."""
    raw = raw or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_creation_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
    )


def model_usage_of(raw: dict[str, Any]) -> Usage:
    """One `modelUsage` entry (camel case) as a Usage."""
    return Usage(
        input_tokens=int(raw.get("inputTokens") or 0),
        output_tokens=int(raw.get("outputTokens") or 0),
        cache_creation_tokens=int(raw.get("cacheCreationInputTokens") or 0),
        cache_read_tokens=int(raw.get("cacheReadInputTokens") or 0),
    )


def result_text(content: Any) -> str:
    """A tool result's content (a string or a list of text/image blocks) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return json.dumps(content)


@dataclass
class _Thread:
    """The messages of one agent (the main one, or one subagent), merged by message id."""

    messages: list[Message] = field(default_factory=list)
    usage_by_id: dict[str, Usage] = field(default_factory=dict)
    last_id: str | None = None
    model: str | None = None

    def assistant(self, line: dict[str, Any]) -> Message | None:
        msg = line.get("message") or {}
        ident = msg.get("id")
        if ident and ident == self.last_id and self.messages:
            target = self.messages[-1]
        else:
            target = Message(role="assistant", timestamp=parse_timestamp(line.get("timestamp")))
            self.messages.append(target)
            self.last_id = ident
        if ident:  # repeated on every line of one response: count it once
            self.usage_by_id[ident] = usage_of(msg.get("usage"))
        self.model = msg.get("model") or self.model
        for block in msg.get("content") or []:
            kind = block.get("type")
            if kind == "text":
                target.content = _join(target.content, block.get("text", ""))
            elif kind == "thinking":
                target.reasoning = _join(target.reasoning or "", block.get("thinking", ""))
            elif kind in ("tool_use", "server_tool_use"):
                target.tool_calls.append(
                    ToolCall(
                        id=block.get("id", ""),
                        name=block.get("name", ""),
                        arguments=json.dumps(block.get("input") or {}),
                    )
                )
        return target

    def user(self, line: dict[str, Any]) -> None:
        self.last_id = None
        content = (line.get("message") or {}).get("content")
        stamp = parse_timestamp(line.get("timestamp"))
        if isinstance(content, str):
            self.messages.append(Message(role="user", content=content, timestamp=stamp))
            return
        texts = []
        for block in content or []:
            if block.get("type") == "tool_result":
                self.messages.append(
                    Message(
                        role="tool",
                        tool_call_id=block.get("tool_use_id"),
                        name=self._tool_name(block.get("tool_use_id")),
                        content=result_text(block.get("content")),
                        is_error=bool(block.get("is_error")),
                        timestamp=stamp,
                    )
                )
            elif block.get("type") == "text":
                texts.append(block.get("text", ""))
        if texts:
            self.messages.append(Message(role="user", content="\n".join(texts), timestamp=stamp))

    def _tool_name(self, call_id: str | None) -> str | None:
        for message in reversed(self.messages):
            for call in message.tool_calls:
                if call.id == call_id:
                    return call.name
        return None

    @property
    def usage(self) -> Usage:
        return sum(self.usage_by_id.values(), Usage())


def _join(left: str, right: str) -> str:
    return f"{left}\n\n{right}" if left and right else left or right


class TraceBuilder:
    """Accumulates stream lines; `feed` returns a one-line progress note (or None) per line."""

    def __init__(self, task_id: str, prompt: str, *, executor: str, cwd: str | None = None):
        self.task_id, self.executor, self.cwd = task_id, executor, cwd
        self.started = datetime.now(UTC)
        self.main = _Thread(messages=[Message(role="user", content=prompt)])
        self.subagents: dict[str, _Thread] = {}
        self.init: dict[str, Any] = {}
        self.result: dict[str, Any] | None = None
        self.synthetic: list[str] = []
        self.denials: list[dict[str, Any]] = []  # `system/permission_denied` lines, as they come

    def feed(self, line: dict[str, Any]) -> str | None:
        kind = line.get("type")
        parent = line.get("parent_tool_use_id")
        thread = self._subagent(parent) if parent else self.main
        if kind == "system":
            return self._system(line)
        if kind == "assistant":
            if (line.get("message") or {}).get("model") == SYNTHETIC_MODEL:
                text = result_text((line.get("message") or {}).get("content"))
                self.synthetic.append(text)
                return None
            message = thread.assistant(line)
            return _progress(message, line, parent) if message is not None else None
        if kind == "user":
            thread.user(line)
        elif kind == "result":
            self.result = line
        return None

    def _subagent(self, tool_use_id: str) -> _Thread:
        if tool_use_id not in self.subagents:
            self.subagents[tool_use_id] = _Thread()
        return self.subagents[tool_use_id]

    def _system(self, line: dict[str, Any]) -> str | None:
        subtype = line.get("subtype")
        if subtype == "init" and not self.init:
            self.init = line
        elif subtype == "task_started" and line.get("tool_use_id"):
            thread = self._subagent(line["tool_use_id"])
            if line.get("prompt") and not thread.messages:
                thread.messages.append(Message(role="user", content=str(line["prompt"])))
        elif subtype == "permission_denied":
            self.denials.append(line)
            return f"denied: {line.get('tool_name')}"
        return None

    @property
    def session_id(self) -> str | None:
        return (self.result or {}).get("session_id") or self.init.get("session_id")

    @property
    def final_text(self) -> str:
        result = self.result or {}
        if isinstance(result.get("result"), str):
            return result["result"]
        for message in reversed(self.main.messages):
            if message.role == "assistant" and message.content:
                return message.content
        return ""

    def usage_by_model(self) -> dict[str, tuple[Usage, float | None]]:
        """Tokens and cost per model, subagents included (the result's `modelUsage`); without
        a result (a killed run), the main thread's messages, priced as unknown."""
        per_model = (self.result or {}).get("modelUsage") or {}
        if per_model:
            return {
                name: (model_usage_of(raw), raw.get("costUSD")) for name, raw in per_model.items()
            }
        usage = self.main.usage + sum((t.usage for t in self.subagents.values()), Usage())
        if not usage.total_tokens:
            return {}
        return {self.main.model or self.init.get("model") or "claude": (usage, None)}

    def build(self, outcome: Outcome, *, system_prompt: str | None = None) -> Trace:
        """The Trace so far, with `outcome` (the caller judges how the run ended)."""
        ended = datetime.now(UTC)
        result = self.result or {}
        by_model = self.usage_by_model()
        usage = sum((u for u, _ in by_model.values()), Usage())
        costs = [c for _, c in by_model.values()]
        if isinstance(result.get("total_cost_usd"), (int, float)):
            cost: float | None = float(result["total_cost_usd"])
        else:
            cost = None if None in costs or not costs else sum(costs)
        if outcome.num_turns is None and isinstance(result.get("num_turns"), int):
            outcome.num_turns = result["num_turns"]
        if outcome.error_message is None and self.synthetic:
            outcome.error_message = self.synthetic[-1]
        provenance = Provenance(
            source="executor",
            executor=self.executor,
            session_id=self.session_id,
            agent="claude-code",
            agent_version=self.init.get("claude_code_version"),
            model=self.main.model or self.init.get("model"),
            cwd=self.cwd or self.init.get("cwd"),
            extra={
                k: v
                for k, v in {
                    "permission_mode": self.init.get("permissionMode"),
                    "terminal_reason": result.get("terminal_reason"),
                    "permission_denials": result.get("permission_denials") or None,
                    "structured_output": result.get("structured_output"),
                }.items()
                if v is not None
            },
        )
        return Trace(
            id=self.task_id,
            system_prompt=system_prompt,
            messages=self.main.messages,
            # the stream names the tools and describes none: Claude Code's own schemas
            tools=schemas(self.init.get("tools") or [], _calls(self.main.messages)),
            usage=usage,
            cost_usd=cost,
            timing=_timing(self.started, ended, result),
            outcome=outcome,
            provenance=provenance,
            subagents=[
                self._subagent_trace(tool_use_id, thread)
                for tool_use_id, thread in self.subagents.items()
            ],
            extra={"synthetic_messages": self.synthetic} if self.synthetic else {},
        )

    def _subagent_trace(self, tool_use_id: str, thread: _Thread) -> Trace:
        return Trace(
            id=f"{self.task_id}/{tool_use_id}",
            messages=thread.messages,
            usage=thread.usage,
            provenance=Provenance(
                source="executor",
                executor=self.executor,
                agent="claude-code",
                model=thread.model,
                parent_session_id=self.session_id,
                extra={"parent_tool_use_id": tool_use_id},
            ),
        )


def _timing(started: datetime, ended: datetime, result: dict[str, Any]) -> Any:
    duration = result.get("duration_ms")
    return Timing(
        started_at=started,
        ended_at=ended,
        duration_s=round(duration / 1000, 3)
        if isinstance(duration, (int, float))
        else round((ended - started).total_seconds(), 3),
    )


def _progress(message: Message, line: dict[str, Any], parent: str | None) -> str | None:
    """The newest block of `message` as one short line for the live display."""
    blocks = (line.get("message") or {}).get("content") or []
    if not blocks:
        return None
    block = blocks[-1]
    prefix = "subagent " if parent else ""
    if block.get("type") in ("tool_use", "server_tool_use"):
        args = json.dumps(block.get("input") or {})
        return f"{prefix}→ {block.get('name')} {args[:120]}"
    if block.get("type") == "text" and block.get("text"):
        return prefix + " ".join(str(block["text"]).split())[:160]
    return None
