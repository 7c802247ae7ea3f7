"""Parse one Codex CLI rollout file into a Trace.

Why a hand-written reader: Codex writes a session as an append-only JSONL "rollout"
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`), one `{timestamp, type, payload}`
line per event, and its shape has drifted across CLI versions (legacy files have no wrapper at
all; tool names went from `shell` to `exec_command`; `apply_patch` became a freeform custom tool).
The file is also often read while Codex is still writing it, so the last line may be cut off. The
reader therefore takes each line on its own: a line it cannot read is counted and noted, an item
kind it does not know is skipped and counted, and everything else still becomes a Trace.

Mapping (rollout -> Trace):

* `session_meta` -> provenance (session id, cwd, cli version, git) and `base_instructions` ->
  `system_prompt`; `turn_context` -> model, approval/sandbox policy, reasoning effort.
* `response_item` `message` -> a user / assistant message (`developer` and `system` roles become
  `system` messages with `extra.codex_role`); `reasoning` -> `reasoning` of the next assistant
  message; `function_call`, `custom_tool_call`, `local_shell_call` -> tool calls of one assistant
  message (parallel calls stay together); `*_output` -> `tool` messages.
* `event_msg` `token_count` -> usage (the last cumulative total; OpenAI counts cached tokens
  inside `input_tokens`, BashGym apart); `error` / `turn_aborted` / `task_complete` -> outcome.
  Other events repeat response items for the UI and are ignored.
* `compacted` -> `Trace.extra["codex_compacted"]` (the rollout keeps the items it summarised).

Real-world shapes this also reads:

* `developer` / `system` messages before the first user turn (sandbox and approval
  instructions) are part of what the model was told first: they are appended, in order, to
  `system_prompt`. Later ones stay in the messages, in order, as `system` messages with
  `extra.codex_role` (training lines keep them in place); both are counted in
  `trace.extra["left_out"]` (`into_system_prompt`, `mid_conversation_system`) for a trainer
  whose chat template refuses a late system message (nemo-jsonl's `mid_conversation_system`).
* Injected context sent as user messages (`<environment_context>`, `<user_instructions>`,
  AGENTS.md instructions) is marked `extra.codex_context` and is not the user's own turn.
* `session_meta.dynamic_tools` (flat, or grouped in namespaces) gives the real tool schemas;
  the Codex CLI's built-in tools get theirs from tools.py, and a called tool neither describes
  is left out of `tools` (the sink infers it from the calls).
* A subagent rollout (`parent_thread_id`, or `source: {subagent: {thread_spawn: {...}}}`)
  names its parent in `provenance.parent_session_id` (the source nests it in its parent).
* Dialogue present only in `event_msg` (`user_message` / `agent_message`, as some CLI
  versions wrote it) is read for the turns whose response items lack it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from bashgym.records import (
    Message,
    Outcome,
    Provenance,
    Timing,
    ToolCall,
    ToolSchema,
    Trace,
    Usage,
    parse_timestamp,
)
from bashgym_sources_codex.tools import builtin, declared, freeform

SOURCE = "codex"
LINE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}
TEXT_PARTS = {"input_text", "output_text", "text", "summary_text", "reasoning_text"}
LOCAL_SHELL = "local_shell"
# response items Codex writes that hold no dialogue (ResponseItem in codex-rs protocol/models.rs):
# skipped, each counted by its type; any other type is counted as `other` (source.py says why)
SKIPPED_TYPES = {
    "web_search_call",
    "image_generation_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "other",
}
TURN_COMPLETED = {"turn.completed", "turn_completed"}
CONTEXT_TAGS = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# AGENTS.md instructions", "user_instructions"),
    ("<permissions instructions>", "permissions"),
)
_EXIT_CODE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.MULTILINE)


@dataclass
class Rollout:
    """What one file gave: the trace, plus its unreadable lines and skipped item kinds."""

    trace: Trace
    bad_lines: list[str] = field(default_factory=list)  # "file:line: reason"
    skipped: Counter[str] = field(default_factory=Counter)  # unknown item type -> count

    @property
    def has_dialogue(self) -> bool:
        return any(
            m.role == "assistant" or (m.role == "user" and "codex_context" not in m.extra)
            for m in self.trace.messages
        )

    @property
    def parent_id(self) -> str | None:
        return self.trace.provenance.parent_session_id


def read_rollout(path: Path, include_reasoning: bool = True) -> Rollout:
    """Read one rollout file; never raises for bad content (OSError only for an unreadable file)."""
    reader = _Reader(path, include_reasoning)
    data = path.read_bytes()
    lines = data.split(b"\n")
    last = len(lines) - 1 if lines and lines[-1] == b"" else len(lines)
    for number, raw in enumerate(lines[:last], start=1):
        if not raw.strip():
            continue
        truncated = number == last and not data.endswith(b"\n")
        reader.feed(number, raw, truncated)
    return reader.finish()


class _Reader:
    def __init__(self, path: Path, include_reasoning: bool) -> None:
        self.path = path
        self.include_reasoning = include_reasoning
        self.messages: list[Message] = []
        self.open_assistant: Message | None = None  # the message new tool calls attach to
        self.pending_reasoning: list[str] = []
        self.tools: dict[str, str] = {}  # tool called -> the item type of its first call
        self.call_names: dict[str, str] = {}
        self.meta: dict[str, Any] = {}
        self.context: dict[str, Any] = {}
        self.models: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.turn_usage: dict[str, Any] | None = None  # from turn.completed, when no token_count
        self.compacted: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.aborted: str | None = None
        self.completed_turns = 0
        self.turns = 0
        self.first_ts: datetime | None = None
        self.last_ts: datetime | None = None
        self.bad_lines: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.turn = 0  # turns seen (turn_context / task_started), for event-only dialogue
        self.item_roles: set[tuple[int, str]] = set()  # (turn, role) given by response items
        self.events: list[tuple[int, int, Message]] = []  # (turn, position, message)

    # ---------------------------------------------------------------------------- lines

    def feed(self, number: int, raw: bytes, truncated: bool) -> None:
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            reason = "truncated last line" if truncated else f"invalid JSON ({exc})"
            self._bad(number, reason)
            return
        if not isinstance(line, dict):
            self._bad(number, f"expected a JSON object, got {type(line).__name__}")
            return
        try:
            self._line(number, line)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            self._bad(number, f"unexpected shape: {type(exc).__name__}: {exc}")

    def _bad(self, number: int, reason: str) -> None:
        self.bad_lines.append(f"{self.path}:{number}: {reason}")

    def _line(self, number: int, line: dict[str, Any]) -> None:
        kind = line.get("type")
        if kind in LINE_TYPES and "payload" in line:
            payload = line["payload"]
            if not isinstance(payload, dict):
                self._bad(number, f"{kind} payload is not an object")
                return
            ts = parse_timestamp(line.get("timestamp"))
            self._tick(ts)
            getattr(self, f"_on_{kind}")(payload, ts)
        elif "record_type" in line:  # legacy rollouts: `{"record_type": "state"}` markers
            return
        elif kind in TURN_COMPLETED:  # `codex exec --json` lines, as 0.50-0.52 files hold
            self._turn_completed(line)
        elif kind is None and "id" in line and not self.meta and not self.messages:
            self._on_session_meta(line, None)  # legacy first line: bare session meta
        elif isinstance(kind, str):
            self._on_response_item(line, None)  # legacy: a bare response item
        else:
            self._bad(number, "no 'type' field")

    def _tick(self, ts: datetime | None) -> None:
        if ts is None:
            return
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts

    # ---------------------------------------------------------------------------- kinds

    def _on_session_meta(self, payload: dict[str, Any], ts: datetime | None) -> None:
        if not self.meta:  # a resumed session may repeat it; the first one describes the file
            self.meta = payload

    def _on_turn_context(self, payload: dict[str, Any], ts: datetime | None) -> None:
        self.turns += 1
        self.turn += 1
        self.context = payload
        model = payload.get("model")
        if isinstance(model, str) and model not in self.models:
            self.models.append(model)

    def _on_compacted(self, payload: dict[str, Any], ts: datetime | None) -> None:
        entry: dict[str, Any] = {"message": payload.get("message", "")}
        if ts is not None:
            entry["timestamp"] = ts.isoformat()
        self.compacted.append(entry)

    def _on_event_msg(self, payload: dict[str, Any], ts: datetime | None) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            info = payload.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                self.usage = info["total_token_usage"]
            elif "input_tokens" in payload:  # older CLIs put the counts on the event itself
                self.usage = payload
        elif kind in TURN_COMPLETED:
            self._turn_completed(payload)
        elif kind == "error":
            self.errors.append(str(payload.get("message", "")))
        elif kind == "turn_aborted":
            self.aborted = str(payload.get("reason", "aborted"))
        elif kind == "task_complete":
            self.completed_turns += 1
            self.aborted = None
        elif kind == "task_started":
            self.turn += 1
        elif kind in ("user_message", "agent_message"):
            text = payload.get("message")
            if isinstance(text, str) and text:
                role = "user" if kind == "user_message" else "assistant"
                message = Message(
                    role=role, content=text, timestamp=ts, extra={"codex_event": True}
                )
                self.events.append((self.turn, len(self.messages), message))

    def _turn_completed(self, payload: dict[str, Any]) -> None:
        """A finished turn's `usage` (the session's running total, as token_count's): the
        usage of files that have no token_count event."""
        if isinstance(payload.get("usage"), dict):
            self.turn_usage = payload["usage"]

    def _on_response_item(self, item: dict[str, Any], ts: datetime | None) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item, ts)
        elif kind == "reasoning":
            self.open_assistant = None  # a reasoning item starts a new model response
            text = _reasoning_text(item)
            if text and self.include_reasoning:
                self.pending_reasoning.append(text)
        elif kind in CALL_TYPES:
            self._call(item, ts)
        elif kind in OUTPUT_TYPES:
            self._output(item, ts)
        else:
            self.skipped[str(kind)] += 1

    # ---------------------------------------------------------------------------- items

    def _message(self, item: dict[str, Any], ts: datetime | None) -> None:
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "assistant":
            self.item_roles.add((self.turn, "assistant"))
            message = self._assistant(text, ts)
            self.open_assistant = message
            return
        self.open_assistant = None
        self.item_roles.add((self.turn, "user" if role in ("user", None) else str(role)))
        if role == "user":
            extra: dict[str, Any] = {}
            head = text.lstrip()[:40]
            for tag, kind in CONTEXT_TAGS:
                if head.startswith(tag):
                    extra["codex_context"] = kind
                    break
            self.messages.append(Message(role="user", content=text, timestamp=ts, extra=extra))
        else:  # developer / system instructions injected by Codex
            extra = {"codex_role": role}
            self.messages.append(Message(role="system", content=text, timestamp=ts, extra=extra))

    def _assistant(self, text: str, ts: datetime | None) -> Message:
        reasoning = "\n\n".join(self.pending_reasoning) or None
        self.pending_reasoning = []
        message = Message(role="assistant", content=text, reasoning=reasoning, timestamp=ts)
        self.messages.append(message)
        return message

    def _call(self, item: dict[str, Any], ts: datetime | None) -> None:
        kind = item["type"]
        call_id = str(item.get("call_id") or item.get("id") or f"call_{len(self.call_names)}")
        if kind == "local_shell_call":
            name = LOCAL_SHELL
            arguments = json.dumps(item.get("action") or {}, ensure_ascii=False)
        elif kind == "custom_tool_call":
            # Freeform tools (apply_patch) take raw text; Codex's function form of the same
            # tool takes {"input": text}, so this keeps arguments JSON and the two forms alike.
            name = str(item.get("name", "custom_tool"))
            arguments = json.dumps({"input": item.get("input", "")}, ensure_ascii=False)
        else:
            name = str(item.get("name", "function"))
            arguments = item.get("arguments", "{}")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
        message = self.open_assistant or self._assistant("", ts)
        self.open_assistant = message
        message.tool_calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        if kind == "custom_tool_call":
            message.extra.setdefault("codex_custom_calls", []).append(call_id)
        self.call_names[call_id] = name
        self.tools.setdefault(name, kind)

    def _output(self, item: dict[str, Any], ts: datetime | None) -> None:
        self.open_assistant = None
        call_id = str(item.get("call_id", ""))
        content, is_error = _output_text(item.get("output"))
        self.messages.append(
            Message(
                role="tool",
                content=content,
                tool_call_id=call_id,
                name=self.call_names.get(call_id),
                is_error=is_error,
                timestamp=ts,
            )
        )

    # ---------------------------------------------------------------------------- result

    def _event_dialogue(self) -> int:
        """Insert `user_message` / `agent_message` events of turns whose response items did
        not carry that role (older CLIs wrote some turns only as events)."""
        # An event repeats a response item's message; matched by turn, or by role and text
        # when the event came before its turn's marker (task_started, turn_context) or no
        # marker came at all: otherwise that user turn would appear twice.
        given = Counter((m.role, (m.content or "").strip()) for m in self.messages)
        missing = []
        for turn, at, m in self.events:
            key = (m.role, (m.content or "").strip())
            if given[key] > 0:
                given[key] -= 1
            elif (turn, m.role) not in self.item_roles:
                missing.append((turn, at, m))
        for shift, (_, at, message) in enumerate(missing):
            self.messages.insert(at + shift, message)
        return len(missing)

    def _fold_instructions(self, base: str | None) -> tuple[str | None, dict[str, dict[str, int]]]:
        """Developer/system messages before the first user turn join the system prompt, in
        order; later ones stay where they are. Both are counted (see the module docstring)."""
        left_out: dict[str, dict[str, int]] = {}
        parts = [base] if base else []
        while self.messages and self.messages[0].role == "system":
            parts.append(self.messages.pop(0).content)
            into = left_out.setdefault("into_system_prompt", {"system": 0})
            into["system"] += 1
        later = sum(m.role == "system" for m in self.messages)
        if later:
            left_out["mid_conversation_system"] = {"system": later}
        return ("\n\n".join(p for p in parts if p) or None), left_out

    def finish(self) -> Rollout:
        if self.pending_reasoning:  # reasoning with no answer after it (an interrupted turn)
            self._assistant("", None)
        from_events = self._event_dialogue()
        meta, context = self.meta, self.context
        system_prompt, left_out = self._fold_instructions(
            _base_instructions(meta.get("base_instructions"))
        )
        parent_id, spawn = _parent_of(meta)
        git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
        session_id = meta.get("id") or meta.get("session_id")
        extra = {
            "originator": meta.get("originator"),
            "model_provider": meta.get("model_provider"),
            "session_source": meta.get("source"),
            "forked_from_id": meta.get("forked_from_id"),
            "repository_url": git.get("repository_url"),
            "approval_policy": context.get("approval_policy"),
            "sandbox_policy": context.get("sandbox_policy"),
            "reasoning_effort": context.get("effort"),
            "models": self.models if len(self.models) > 1 else None,
            "agent_role": spawn.get("agent_role"),
            "agent_nickname": spawn.get("agent_nickname"),
            "spawn_depth": spawn.get("depth"),
        }
        provenance = Provenance(
            source=SOURCE,
            source_file=str(self.path),
            session_id=str(session_id) if session_id else None,
            agent="codex",
            agent_version=meta.get("cli_version"),
            model=self.models[0] if self.models else None,
            cwd=meta.get("cwd") or context.get("cwd"),
            git_branch=git.get("branch"),
            git_commit=git.get("commit_hash"),
            parent_session_id=parent_id,
            extra={k: v for k, v in extra.items() if v is not None},
        )
        started = parse_timestamp(meta.get("timestamp")) or self.first_ts
        ended = self.last_ts
        duration = (ended - started).total_seconds() if started and ended else None
        trace_extra: dict[str, Any] = {}
        if self.compacted:
            trace_extra["codex_compacted"] = self.compacted
        if isinstance(meta.get("instructions"), str):  # legacy: the user's AGENTS.md text
            trace_extra["codex_user_instructions"] = meta["instructions"]
        if self.usage is None:
            self.usage = self.turn_usage
        if self.usage is not None:
            trace_extra["codex_token_usage"] = self.usage
        if left_out:
            trace_extra["left_out"] = left_out
        if from_events:
            trace_extra["codex_event_messages"] = from_events
        trace = Trace(
            id=str(session_id) if session_id else self.path.stem,
            system_prompt=system_prompt,
            messages=self.messages,
            tools=self._tools(meta.get("dynamic_tools")),
            usage=_usage(self.usage),
            timing=Timing(started_at=started, ended_at=ended, duration_s=duration),
            outcome=self._outcome(),
            provenance=provenance,
            extra=trace_extra,
        )
        return Rollout(trace=trace, bad_lines=self.bad_lines, skipped=self.skipped)

    def _tools(self, dynamic: Any) -> list[ToolSchema]:
        """The session's declared tools (`dynamic_tools` with a schema), then a schema for
        each tool it called from the Codex CLI's table (tools.py). A called tool known to
        neither is left out: the sink infers its parameters from the calls (and says so),
        where an empty schema would pass for the real one."""
        out = _dynamic_tools(dynamic)
        calls: dict[str, list[ToolCall]] = {}
        for message in self.messages:
            for call in message.tool_calls:
                calls.setdefault(call.name, []).append(call)
        for name, kind in self.tools.items():
            if name in out:
                continue
            schema = builtin(name) or (freeform(name) if kind == "custom_tool_call" else None)
            if schema is not None:
                out[name] = declared(schema, calls.get(name, ()))
        return list(out.values())

    def _outcome(self) -> Outcome:
        turns = self.turns or None
        if self.errors:
            return Outcome(
                success=False, error_kind="error", error_message=self.errors[-1], num_turns=turns
            )
        if self.aborted is not None:
            return Outcome(
                success=False, error_kind="aborted", error_message=self.aborted, num_turns=turns
            )
        return Outcome(success=True if self.completed_turns else None, num_turns=turns)


# -------------------------------------------------------------------------------- helpers


def _content_text(content: Any) -> str:
    """Text of a message's content parts; images become a marker, not silence."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") in TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") in ("input_image", "image"):
            texts.append("[image]")
    return "\n".join(texts)


def _reasoning_text(item: dict[str, Any]) -> str:
    """Full reasoning text when Codex stored it, else the summary (encrypted parts stay out)."""
    return _content_text(item.get("content")) or "\n\n".join(
        part["text"]
        for part in item.get("summary") or []
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _output_text(output: Any) -> tuple[str, bool]:
    """A tool result as the model saw it, and whether it reports a failure (non-zero exit)."""
    if isinstance(output, dict):  # {"content": ..., "success": bool}
        text = output.get("content")
        text = text if isinstance(text, str) else _content_text(text)
        return text, output.get("success") is False or _failed(text)
    if isinstance(output, list):  # content items (MCP results, images)
        text = _content_text(output)
        return text, _failed(text)
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text, _failed(text)


def _failed(text: str) -> bool:
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
            code = value["metadata"].get("exit_code")
            return isinstance(code, int) and code != 0
    match = _EXIT_CODE.search(text[:500])
    return bool(match) and int(match.group(1)) != 0


def _parent_of(meta: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The parent thread of a subagent rollout, and its spawn details, from session_meta."""
    source = meta.get("source")
    spawn: dict[str, Any] = {}
    if isinstance(source, dict):
        sub = source.get("subagent") or source.get("subAgent")
        if isinstance(sub, dict) and isinstance(sub.get("thread_spawn"), dict):
            spawn = sub["thread_spawn"]
    parent = meta.get("parent_thread_id") or spawn.get("parent_thread_id")
    return (str(parent) if parent else None), spawn


def _dynamic_tools(value: Any) -> dict[str, ToolSchema]:
    """`session_meta.dynamic_tools`: tools given flat or grouped in namespaces, each with its
    JSON schema under `inputSchema` or `parameters`. A name without a schema is not a
    declaration: its tool is described like one the session did not declare."""
    out: dict[str, ToolSchema] = {}
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, dict):
            continue
        members = entry.get("tools") if entry.get("type") == "namespace" else [entry]
        for tool in members if isinstance(members, list) else []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            schema = tool.get("inputSchema", tool.get("input_schema", tool.get("parameters")))
            if not isinstance(schema, dict):
                continue
            description = tool.get("description")
            out[tool["name"]] = ToolSchema(
                name=tool["name"],
                description=description if isinstance(description, str) else "",
                parameters=schema,
            )
    return out


def _base_instructions(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def _usage(total: dict[str, Any] | None) -> Usage:
    if not total:
        return Usage()

    def num(key: str) -> int:
        value = total.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = num("cached_input_tokens")
    return Usage(
        input_tokens=max(num("input_tokens") - cached, 0),
        output_tokens=num("output_tokens"),
        cache_read_tokens=cached,
    )
