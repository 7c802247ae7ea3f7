"""Parse one Claude Code transcript file (JSONL) into one normalized Trace, line by line.

Why a parser of our own rather than DataDesigner's `AgentRolloutSeedSource(format=CLAUDE_CODE)`
(data_designer/engine/resources/agent_rollout/claude_code.py, 0.9.6):

- It is not right for training data: one API response written as several lines (one content
  block each, sharing `message.id`) becomes several assistant messages (a text turn, then a
  tool-call turn with empty content); usage, cost, `is_error` on tool results and the model are
  dropped; a subagent file becomes a separate top-level row; one bad line makes it skip the whole
  file (a warning, no count), so a truncated session, the common case for a live session, is lost.
- It is not fast enough: stdlib `json`, each file's rows held as a list, each batch hydrated into
  a DataFrame through DuckDB. Measured by bench/ingest_claude_code.py on the same generated
  corpus, one 2-core machine, best of 3 (MB/s wall-clock, peak RSS of each method's process):

  | corpus | orjson decode only | this source      | DataDesigner reader (batch 100) |
  |--------|--------------------|------------------|---------------------------------|
  | 50 MB  | 438 MB/s, 21 MiB   | 235 MB/s, 41 MiB | 89 MB/s, 212 MiB                |
  | 250 MB | 437 MB/s, 23 MiB   | 236 MB/s, 42 MiB | 94 MB/s, 221 MiB                |
  | 1 GB   | 433 MB/s, 24 MiB   | 243 MB/s, 43 MiB | 93 MB/s, 230 MiB                |

  (imports alone take 37 MiB here, 143 MiB there; on a busy machine wall-clock drops, CPU
  time stays put: ours 216-246 MB/s of CPU time over five runs.)

So this module streams each file in binary, decodes each line once with orjson, keeps only small
per-turn accumulators, and builds the pydantic models without validation (`_constructor`): the
values are built here with the right types, validated construction would cost more than the
parse itself, and the tests check that every trace equals `Trace.model_validate` of its own dump
and round-trips through `trace_to_row` / `trace_from_row`, fuzzed input included.

What a transcript holds and how it maps (shared/reference/claude-code.md):
- `assistant` lines: merged by `message.id` (even when a tool result line falls between two
  blocks of the same response); text blocks -> `content`, thinking blocks -> `reasoning`,
  tool_use blocks -> `ToolCall` (arguments as JSON text). Usage is counted once per `message.id`:
  each field is the largest value among the lines of that response (lines repeat the usage, and
  streamed lines may carry a partial `output_tokens`).
- `user` lines: text -> a user message; `tool_result` blocks -> `tool` messages (tool_call_id,
  is_error, name of the called tool, content flattened to text). Images and documents (PDFs)
  become `[image]` / `[document]` markers, never silence.
- Which user lines are the user's turns, decided per kind: a typed prompt is; the prompt of
  a `queued_command` attachment (typed while the agent worked, `commandMode: prompt`) is; the
  expansion of a slash command (an `isMeta` line after the `<command-name>` line) is part of
  that command's turn and is appended to it. Other `isMeta` text (the "Caveat:" note, hook
  feedback) and queued task notifications are metadata: kept in `trace.extra["meta"]` with the
  index of the message they follow, not turns. Other attachments (hook context, memory, edited
  files, listings) are counted by kind in `trace.extra["attachments"]`. The user line after a
  `compact_boundary` (`isCompactSummary`) is kept with `extra.compact_summary = true`, and the
  boundary's message index is listed in `trace.extra.compact_boundaries`.
- Branches and subagents written into the file (threads.py): a branch abandoned by a rewind is
  left out; 1.x subagent lines (`isSidechain: true`) and headless subagent lines
  (`parent_tool_use_id`) become nested subagent traces attached to the Task/Agent call that
  spawned them, never turns of the main agent.
- `system` lines: `compact_boundary` as above, `api_error` counted in `extra.api_errors`;
  everything else (summary, progress, file-history-snapshot, queue-operation, last-prompt,
  custom-title, mode, and types not yet invented) carries no dialogue and is ignored.
- Headless `claude -p --output-format stream-json` output is read too: its `system`/`init` line
  lists every tool, and its `result` line gives the outcome, the usage and the real cost (its
  streamed assistant lines carry partial `output_tokens`).
- A trace's usage and cost are its own: a subagent's are on the subagent's trace (as in the
  CLI's `result.usage`); add `trace.subagents` for the session's total.

Nothing is dropped without a count: `trace.extra["left_out"]` says, per reason (`rewind`,
`replay`, `meta`, `merged`), how many user and assistant messages, tool calls and tool results
of the file are not in the trace's messages, so a raw count of the file and the trace agree
(bench/transcript_corpus.py checks this on every fixture).

Transcripts store no system prompt (`system_prompt` stays None) and no tool definitions:
`tools` holds Claude Code's own schema for each tool called or listed by a stream-json init
line, and a schema inferred from the recorded arguments for any other tool (tools.py).

Success (Outcome.success), for sessions without a `result` line: the session's last message is
an assistant reply with no pending tool call that is not an API error (`isApiErrorMessage` or an
`error` field on the line). A failed tool call earlier in the session that the agent recovered
from does not make it a failure. Otherwise `error_kind` says why: `api_error`, `tool_error`
(ended on a failed tool result with no reply), `interrupted` (ended on a tool call or result,
or the user's "[Request interrupted" line), `no_response` (ended on a user message) or `empty`.
`num_turns` counts assistant responses.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson
from bashgym_claude_tools import schemas

from bashgym.records import Message, Outcome, Provenance, Timing, ToolCall, Trace, Usage
from bashgym_sources_claude_code.pricing import estimate_cost
from bashgym_sources_claude_code.threads import Graph

T = TypeVar("T")
Report = Callable[[str, int, str], None]
"""`report(file, line, reason)`: called once for each line that could not be used."""

_loads = orjson.loads
_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
_fromiso = datetime.fromisoformat
_setattr = object.__setattr__
SYNTHETIC_MODEL = "<synthetic>"


def _constructor(cls: type[T]) -> Callable[[dict[str, Any]], T]:
    """A trusted-data constructor for `cls` from a dict holding every field.

    `model_construct` walks every field per object to look for aliases and defaults (and a field
    left to its default_factory costs an `inspect.signature` call: 85 us an object, measured);
    with all fields given and no aliases, what remains of it is these four assignments: 1.1 us
    an object against 3 us, which took this parser from 217 to 263 MB/s (CPU time, 50 MB bench
    corpus). Models with aliases, extra="allow", private attributes or a post-init hook fall
    back to `model_construct`.
    """
    fields = cls.model_fields
    plain = (
        all(f.alias is None and f.validation_alias is None for f in fields.values())
        and cls.model_config.get("extra") != "allow"
        and not cls.__pydantic_post_init__
        and not cls.__private_attributes__
        and not cls.__pydantic_root_model__
    )
    if not plain:
        return lambda values: cls.model_construct(**values)
    names = frozenset(fields)
    new = object.__new__

    def build(values: dict[str, Any]) -> T:
        obj = new(cls)
        _setattr(obj, "__dict__", values)
        _setattr(obj, "__pydantic_fields_set__", set(names))
        _setattr(obj, "__pydantic_extra__", None)
        _setattr(obj, "__pydantic_private__", None)
        return obj

    return build


_new_message = _constructor(Message)
_new_call = _constructor(ToolCall)


def _message(
    role: str,
    content: str,
    *,
    tool_calls: list[ToolCall] | None = None,
    reasoning: str | None = None,
    timestamp: datetime | None = None,
    extra: dict[str, Any] | None = None,
) -> Message:
    """A user or assistant Message (tool results are built inline: they are the most)."""
    return _new_message(
        {
            "role": role,
            "content": content,
            "tool_calls": [] if tool_calls is None else tool_calls,
            "tool_call_id": None,
            "name": None,
            "is_error": False,
            "reasoning": reasoning,
            "timestamp": timestamp,
            "extra": {} if extra is None else extra,
        }
    )


class ShapeError(ValueError):
    """A line that is valid JSON but not the shape its `type` promises."""


def _ts(value: Any) -> datetime | None:
    if value.__class__ is str:
        try:
            return _fromiso(value)
        except ValueError:
            return None
    return None


MARKERS = {"image": "[image]", "document": "[document]"}
"""Content blocks that stand for bytes a text model cannot see: kept as a marker, as every
source does, so the turn still says something was there."""


def _text(value: Any) -> str:
    """Flatten tool-result or message content (a string or a list of blocks) to text."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if value.__class__ is list:
        parts = []
        for block in value:
            if block.__class__ is dict:
                kind = block.get("type")
                if kind == "text":
                    text = block.get("text")
                    parts.append(text if text.__class__ is str else _text(text))
                elif kind in MARKERS:
                    parts.append(MARKERS[kind])
                else:
                    parts.append(_dumps(block).decode())
            elif block.__class__ is str:
                parts.append(block)
            else:
                parts.append(_dumps(block).decode())
        return "\n".join(parts)
    return _dumps(value).decode()


class _Turn:
    """One assistant API response being assembled from its one-block-per-line pieces."""

    __slots__ = (
        "api_error",
        "calls",
        "message_id",
        "model",
        "other_blocks",
        "stop_reason",
        "texts",
        "thinking",
        "timestamp",
        "usage",
    )

    def __init__(self, message_id: str | None, model: Any, timestamp: Any) -> None:
        self.texts: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.usage = [0, 0, 0, 0]
        self.model = model if model.__class__ is str else None
        self.timestamp = timestamp
        self.message_id = message_id
        self.stop_reason: str | None = None
        self.api_error = False
        self.other_blocks: list[str] | None = None

    def message(self) -> Message:
        extra: dict[str, Any] = {}
        if self.message_id is not None:
            extra["message_id"] = self.message_id
        if self.stop_reason is not None:
            extra["stop_reason"] = self.stop_reason
        if self.api_error:
            extra["api_error"] = True
        if self.other_blocks:
            extra["other_blocks"] = self.other_blocks
        return _message(
            "assistant",
            "\n\n".join(self.texts),
            tool_calls=self.calls,
            reasoning="\n\n".join(self.thinking) if self.thinking else None,
            timestamp=_ts(self.timestamp),
            extra=extra,
        )


class _Item:
    """A message-to-be in file order, with the line it came from (for branches and subagents)."""

    __slots__ = ("group", "owner", "value")

    def __init__(self, value: Any, owner: str | None, group: Any) -> None:
        self.value = value  # a _Turn or a Message
        self.owner = owner  # uuid of the line that started it
        self.group = group  # None: the main conversation; else the subagent it belongs to


def _tally(items: list[_Item]) -> dict[str, int]:
    """How many user/assistant messages, tool calls and tool results `items` hold."""
    out = {"user": 0, "assistant": 0, "tool_calls": 0, "tool_results": 0}
    for item in items:
        value = item.value
        if value.__class__ is _Turn:
            out["assistant"] += 1
            out["tool_calls"] += len(value.calls)
        elif value.role == "tool":
            out["tool_results"] += 1
        else:
            out["user"] += 1
    return {k: v for k, v in out.items() if v}


def _add(left_out: dict[str, dict[str, int]], reason: str, counts: dict[str, int]) -> None:
    if not counts:
        return
    into = left_out.setdefault(reason, {})
    for key, n in counts.items():
        into[key] = into.get(key, 0) + n


COMMAND_TAGS = ("<command-name>", "<command-message>")


def _after_results(messages: list[Message]) -> list[Message]:
    """A prompt queued while tools ran reaches the model after their results (Claude Code
    sends it with the next request), though its line may be written before them."""
    if not any(m.extra.get("queued") for m in messages):
        return messages
    out: list[Message] = []
    held: list[Message] = []
    pending: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            out.extend(held)
            held = []
            pending = {call.id for call in message.tool_calls}
            out.append(message)
        elif message.role == "tool":
            pending.discard(message.tool_call_id or "")
            out.append(message)
            if not pending:
                out.extend(held)
                held = []
        elif pending and message.extra.get("queued"):
            held.append(message)
        else:
            out.extend(held)
            held = []
            out.append(message)
    return out + held


class TranscriptParser:
    """Feed decoded lines of one file with `feed`, then `finish()` returns the Trace (or None)."""

    def __init__(self, source_file: str) -> None:
        self.source_file = source_file
        self.items: list[_Item] = []
        self.turns: dict[Any, _Turn] = {}
        self.turn_items: dict[int, _Item] = {}
        self.user_items: dict[str, _Item] = {}  # uuid -> the user text item it gave
        self.call_names: dict[str, str] = {}
        self.graph = Graph()
        self.last_main: str | None = None  # the last main-conversation line that gave a message
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.meta_seen = False
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.version: str | None = None
        self.agent_id: str | None = None
        self.sidechain_lines = 0
        self.main_lines = 0
        self.agent_ids: dict[Any, str] = {}  # subagent group -> its agentId, when lines say
        self.compact_boundaries: list[int] = []  # item positions, turned into message indices
        self.api_errors = 0
        self.init_tools: list[str] | None = None
        self.init_model: str | None = None
        self.result: dict[str, Any] | None = None
        self.meta: list[tuple[int, str, str, Any]] = []  # (item position, kind, text, group)
        self.attachments: dict[str, int] = {}
        self.left_out: dict[str, dict[str, int]] = {}
        self.spawned_agents: dict[str, str] = {}  # agentId -> the Task/Agent call that ran it
        self.spawned_runs: dict[str, str] = {}  # workflow runId -> the Workflow call

    # -- lines -------------------------------------------------------------------------------

    def feed(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        ts = obj.get("timestamp")
        if ts.__class__ is str:
            if self.first_ts is None:
                self.first_ts = ts
            self.last_ts = ts
        uuid = obj.get("uuid")
        if uuid.__class__ is str:
            parent = obj.get("parentUuid")
            if parent is None and obj.get("logicalParentUuid").__class__ is str:
                parent = obj["logicalParentUuid"]  # a compaction boundary continues this line
            side = obj.get("isSidechain") is True
            self.graph.add(uuid, parent if parent.__class__ is str else None, side, ts)
        else:
            uuid = None
        if kind == "assistant":
            if not self.meta_seen:
                self._meta(obj)
            self._assistant(obj, ts, uuid, self._group(obj, uuid))
        elif kind == "user":
            if not self.meta_seen:
                self._meta(obj)
            self._user(obj, ts, uuid, self._group(obj, uuid))
        elif kind == "attachment":
            self._attachment(obj, ts, uuid)
        elif kind == "system":
            self._system(obj)
        elif kind == "result":
            self.result = obj
            if self.session_id is None and obj.get("session_id").__class__ is str:
                self.session_id = obj["session_id"]

    def _group(self, obj: dict[str, Any], uuid: str | None) -> Any:
        """Which conversation a line belongs to: None (main), a sidechain, or the subagent of
        a headless tool call. Sidechains are split out in `finish`, once it is known whether
        the file holds a main conversation at all (a 2.x subagent file is all sidechain)."""
        spawned_by = obj.get("parent_tool_use_id")
        if spawned_by.__class__ is str:
            return ("call", spawned_by)
        if obj.get("isSidechain") is True:
            self.sidechain_lines += 1
            if obj.get("agentId").__class__ is str and uuid is not None:
                self.agent_ids.setdefault(("side", uuid), obj["agentId"])
            return ("side", uuid)
        self.main_lines += 1
        return None

    def _mark(self, uuid: str | None, group: Any, prompt: bool = False) -> None:
        if uuid is None:
            return
        self.graph.conversational.add(uuid)
        if prompt:
            self.graph.prompts.add(uuid)
        if group is None:
            self.last_main = uuid

    def _meta(self, obj: dict[str, Any]) -> None:
        self.meta_seen = True
        get = obj.get
        session = get("sessionId") or get("session_id")
        if session.__class__ is str:
            self.session_id = session
        for attr, key in (
            ("cwd", "cwd"),
            ("git_branch", "gitBranch"),
            ("version", "version"),
            ("agent_id", "agentId"),
        ):
            value = get(key)
            if value.__class__ is str and getattr(self, attr) is None:
                setattr(self, attr, value)

    def _assistant(self, obj: dict[str, Any], ts: Any, uuid: str | None, group: Any) -> None:
        msg = obj.get("message")
        if msg.__class__ is not dict:
            raise ShapeError("assistant line without a message object")
        get = msg.get
        message_id = get("id")
        if message_id.__class__ is not str:
            message_id = uuid
        turn = self.turns.get(message_id) if message_id is not None else None
        if turn is None:
            turn = _Turn(message_id, get("model"), ts)
            if message_id is not None:
                self.turns[message_id] = turn
            self.items.append(_Item(turn, uuid, group))
        self._mark(uuid, group)
        if obj.get("isApiErrorMessage") is True or obj.get("error") is not None:
            turn.api_error = True
        stop = get("stop_reason")
        if stop.__class__ is str:
            turn.stop_reason = stop
        usage = get("usage")
        if usage.__class__ is dict:  # the same usage repeats on each line: keep the largest
            acc = turn.usage
            u = usage.get
            v = u("input_tokens")
            if v.__class__ is int and v > acc[0]:
                acc[0] = v
            v = u("output_tokens")
            if v.__class__ is int and v > acc[1]:
                acc[1] = v
            v = u("cache_creation_input_tokens")
            if v.__class__ is int and v > acc[2]:
                acc[2] = v
            v = u("cache_read_input_tokens")
            if v.__class__ is int and v > acc[3]:
                acc[3] = v
        content = get("content")
        if content.__class__ is str:
            turn.texts.append(content)
            return
        if content.__class__ is not list:
            return
        for block in content:
            if block.__class__ is str:  # a bare string in the list is text, not nothing
                turn.texts.append(block)
                continue
            if block.__class__ is not dict:  # a shape with no text: counted, never silent
                _add(self.left_out, "unreadable block", {"blocks": 1})
                continue
            bt = block.get("type")
            if bt == "text":
                text = block.get("text")
                if text.__class__ is str and text:
                    turn.texts.append(text)
            elif bt == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if call_id.__class__ is not str or name.__class__ is not str:
                    raise ShapeError("tool_use block without a string id and name")
                args = block.get("input")
                turn.calls.append(
                    _new_call(
                        {
                            "id": call_id,
                            "name": name,
                            "arguments": _dumps(args).decode() if args is not None else "{}",
                        }
                    )
                )
                self.call_names[call_id] = name
            elif bt == "thinking":
                text = block.get("thinking")
                if text.__class__ is str and text:
                    turn.thinking.append(text)
            else:
                if turn.other_blocks is None:
                    turn.other_blocks = []
                turn.other_blocks.append(str(bt))

    def _user(self, obj: dict[str, Any], ts: Any, uuid: str | None, group: Any) -> None:
        msg = obj.get("message")
        if msg.__class__ is not dict:
            raise ShapeError("user line without a message object")
        content = msg.get("content")
        if content.__class__ is str:
            self._user_text(obj, content, ts, uuid, group)
            return
        if content.__class__ is dict:
            content = [content]
        elif content.__class__ is not list:
            raise ShapeError("user message content is neither text nor a list of blocks")
        texts: list[str] | None = None
        spawned = obj.get("toolUseResult")
        for block in content:
            if block.__class__ is str:  # a bare string in the list is text, not nothing
                texts = texts or []
                texts.append(block)
                continue
            if block.__class__ is not dict:  # a shape with no text: counted, never silent
                _add(self.left_out, "unreadable block", {"blocks": 1})
                continue
            bt = block.get("type")
            if bt == "tool_result":
                call_id = block.get("tool_use_id")
                if call_id.__class__ is not str:
                    raise ShapeError("tool_result block without a string tool_use_id")
                self.items.append(
                    _Item(
                        _new_message(
                            {
                                "role": "tool",
                                "content": _text(block.get("content")),
                                "tool_calls": [],
                                "tool_call_id": call_id,
                                "name": self.call_names.get(call_id),
                                "is_error": block.get("is_error") is True,
                                "reasoning": None,
                                "timestamp": _ts(ts),
                                "extra": {},
                            }
                        ),
                        uuid,
                        group,
                    )
                )
                self._mark(uuid, group)
                if spawned.__class__ is dict:
                    self._spawned(spawned, call_id)
            elif bt == "text":
                text = block.get("text")
                if text.__class__ is str:
                    texts = texts or []
                    texts.append(text)
            elif bt in MARKERS:
                texts = texts or []
                texts.append(MARKERS[bt])
            else:  # a block type not known yet: its JSON, not silence
                texts = texts or []
                texts.append(_dumps(block).decode())
        if texts:
            self._user_text(obj, "\n".join(texts), ts, uuid, group)

    def _spawned(self, result: dict[str, Any], call_id: str) -> None:
        """Remember which call ran a subagent (2.x Task/Agent) or a workflow run, so the
        source can attach their transcript files to that call."""
        agent = result.get("agentId")
        if agent.__class__ is str:
            self.spawned_agents.setdefault(agent, call_id)
        run = result.get("runId")
        if run.__class__ is str:
            self.spawned_runs.setdefault(run, call_id)

    def _user_text(
        self, obj: dict[str, Any], text: str, ts: Any, uuid: str | None, group: Any
    ) -> None:
        if obj.get("isMeta") is True:
            self._meta_text(text, uuid, group)
            return
        extra: dict[str, Any] = {}
        if obj.get("isCompactSummary") is True:
            extra["compact_summary"] = True
        item = _Item(_message("user", text, timestamp=_ts(ts), extra=extra), uuid, group)
        self.items.append(item)
        if uuid is not None:
            self.user_items[uuid] = item
        self._mark(uuid, group, prompt=not extra)

    def _meta_text(self, text: str, uuid: str | None, group: Any) -> None:
        """An `isMeta` user line: a slash command's expansion joins the command's turn (it is
        what the model was asked); anything else is metadata, not a turn."""
        parent = self.graph.parent.get(uuid) if uuid is not None else None
        command = self.user_items.get(parent) if parent is not None else None
        if command is None and uuid is None and self.items:
            last = self.items[-1]
            command = last if last.value.__class__ is not _Turn else None
        if (
            command is not None
            and command.value.role == "user"
            and any(tag in command.value.content for tag in COMMAND_TAGS)
        ):
            message = command.value
            message.content = message.content + "\n\n" + text
            _add(self.left_out, "merged", {"user": 1})
            if uuid is not None:
                self.user_items[uuid] = command
            return
        kind = "caveat" if "Caveat:" in text[:40] else "meta"
        self.meta.append((len(self.items), kind, text, group))
        _add(self.left_out, "meta", {"user": 1})

    def _attachment(self, obj: dict[str, Any], ts: Any, uuid: str | None) -> None:
        attachment = obj.get("attachment")
        if attachment.__class__ is not dict:
            raise ShapeError("attachment line without an attachment object")
        kind = attachment.get("type")
        kind = kind if kind.__class__ is str else "unknown"
        self.attachments[kind] = self.attachments.get(kind, 0) + 1
        if kind != "queued_command":
            return
        prompt = attachment.get("prompt")
        text = prompt if prompt.__class__ is str else _text(prompt)
        mode = attachment.get("commandMode")
        origin = attachment.get("origin")
        origin_kind = origin.get("kind") if origin.__class__ is dict else None
        typed = mode in (None, "prompt") and origin_kind in (None, "human")
        group = self._group(obj, uuid)
        if not typed or not text:
            self.meta.append((len(self.items), f"queued_command.{mode or 'unknown'}", text, group))
            _add(self.left_out, "meta", {"user": 1})
            return
        item = _Item(_message("user", text, timestamp=_ts(ts), extra={"queued": True}), uuid, group)
        self.items.append(item)
        self._mark(uuid, group, prompt=True)

    def _system(self, obj: dict[str, Any]) -> None:
        subtype = obj.get("subtype")
        if subtype == "compact_boundary":
            self.compact_boundaries.append(len(self.items))
        elif subtype == "api_error":
            self.api_errors += 1
        elif subtype == "init":  # stream-json
            tools = obj.get("tools")
            if tools.__class__ is list:
                self.init_tools = [t for t in tools if t.__class__ is str]
            if obj.get("model").__class__ is str:
                self.init_model = obj["model"]
            if self.cwd is None and obj.get("cwd").__class__ is str:
                self.cwd = obj["cwd"]
            if self.session_id is None and obj.get("session_id").__class__ is str:
                self.session_id = obj["session_id"]

    # -- the trace ---------------------------------------------------------------------------

    def finish(self) -> Trace | None:
        """The Trace, or None when the file held no user or assistant message."""
        if not self.items:
            return None
        gone = self.graph.abandoned(self.last_main) if self.last_main is not None else {}
        split_sidechains = self.main_lines > 0
        main: list[_Item] = []
        groups: dict[Any, list[_Item]] = {}
        roots: dict[str, str] = {}
        for item in self.items:
            reason = gone.get(item.owner) if item.owner is not None else None
            if reason is not None:
                _add(self.left_out, reason, _tally([item]))
                continue
            group = item.group
            if group is not None and group[0] == "side":
                if not split_sidechains:
                    group = None
                elif item.owner is not None:
                    group = ("side", self.graph.sidechain_root(item.owner, roots))
            item.group = group
            if group is None:
                main.append(item)
            else:
                groups.setdefault(group, []).append(item)
        if not main and not groups:
            return None
        trace = self._build(main, self.session_id or Path(self.source_file).stem, None)
        self._attach(trace, groups, roots)
        extra = trace.extra
        positions = {id(item): i for i, item in enumerate(self.items)}
        index_of = self._message_index(main, positions)
        if self.compact_boundaries:
            extra["compact_boundaries"] = [index_of(p) for p in self.compact_boundaries]
        meta = [
            {"kind": kind, "after": index_of(p), "text": text}
            for p, kind, text, group in self.meta
            if group is None or not split_sidechains
        ]
        if meta:
            extra["meta"] = meta
        if self.attachments:
            extra["attachments"] = dict(sorted(self.attachments.items()))
        if self.api_errors:
            extra["api_errors"] = self.api_errors
        if self.left_out:
            extra["left_out"] = self.left_out
        if self.spawned_agents:
            extra["spawned_agents"] = self.spawned_agents
        if self.spawned_runs:
            extra["spawned_runs"] = self.spawned_runs
        return trace

    def _message_index(self, main: list[_Item], positions: dict[int, int]) -> Callable[[int], int]:
        """Item position in the file -> the number of main messages before it."""
        kept = sorted(positions[id(item)] for item in main)

        def index_of(position: int) -> int:
            lo, hi = 0, len(kept)
            while lo < hi:
                mid = (lo + hi) // 2
                if kept[mid] < position:
                    lo = mid + 1
                else:
                    hi = mid
            return lo

        return index_of

    def _attach(self, trace: Trace, groups: dict[Any, list[_Item]], roots: dict[str, str]) -> None:
        """Each subagent written into the file becomes a trace under the call that spawned it:
        the call named by `parent_tool_use_id`, else the Task/Agent call whose prompt is the
        subagent's first message (1.x wrote no other link)."""
        if not groups:
            return
        calls = [
            call for m in trace.messages for call in m.tool_calls if call.name in ("Task", "Agent")
        ]
        by_prompt: dict[str, list[str]] = {}
        for call in calls:
            prompt = call.arguments_dict().get("prompt")
            if prompt.__class__ is str:
                by_prompt.setdefault(prompt, []).append(call.id)
        session = trace.provenance.session_id or trace.id
        for n, (group, items) in enumerate(groups.items(), 1):
            if group[0] == "call":
                spawned_by: str | None = group[1]
            else:
                first = next(
                    (i.value.content for i in items if i.value.__class__ is not _Turn), None
                )
                waiting = by_prompt.get(first or "")
                spawned_by = waiting.pop(0) if waiting else None
            agent = self.agent_ids.get(group) or (
                f"sidechain-{n}" if group[0] == "side" else f"call-{group[1]}"
            )
            child = self._build(items, f"{session}:{agent}", agent)
            prov = child.provenance
            prov.parent_session_id = session
            prov.extra["is_sidechain"] = True
            prov.extra["agent_id"] = agent
            prov.extra["in_session_file"] = True
            if spawned_by is not None:
                prov.extra["tool_use_id"] = spawned_by
            trace.subagents.append(child)

    def _build(self, items: list[_Item], trace_id: str, agent: str | None) -> Trace:
        messages: list[Message] = []
        models: dict[str, list[int]] = {}
        totals = [0, 0, 0, 0]
        num_turns = 0
        for item in items:
            value = item.value
            if value.__class__ is _Turn:
                num_turns += 1
                messages.append(value.message())
                usage = value.usage
                for i in range(4):
                    totals[i] += usage[i]
                if value.model is not None and value.model != SYNTHETIC_MODEL:
                    acc = models.setdefault(value.model, [0, 0, 0, 0])
                    for i in range(4):
                        acc[i] += usage[i]
                elif any(usage):
                    models.setdefault("", [0, 0, 0, 0])
            else:
                messages.append(value)
        messages = _after_results(messages)
        usage = Usage.model_construct(
            input_tokens=totals[0],
            output_tokens=totals[1],
            cache_creation_tokens=totals[2],
            cache_read_tokens=totals[3],
        )
        cost: float | None = 0.0
        for model, acc in models.items():
            part = estimate_cost(model, *acc)
            if part is None:
                cost = None
                break
            cost += part  # type: ignore[operator]
        model_names = [m for m in models if m]
        model = model_names[0] if model_names else self.init_model
        is_main = agent is None
        outcome = self._outcome(messages, num_turns, self.result if is_main else None)
        if is_main and self.result is not None:  # the CLI's own totals beat the line sums
            if self.result.get("total_cost_usd").__class__ in (int, float):
                cost = float(self.result["total_cost_usd"])
            final = self.result.get("usage")
            if final.__class__ is dict:
                usage = Usage.model_construct(
                    **{
                        ours: value if (value := final.get(theirs)).__class__ is int else 0
                        for ours, theirs in (
                            ("input_tokens", "input_tokens"),
                            ("output_tokens", "output_tokens"),
                            ("cache_creation_tokens", "cache_creation_input_tokens"),
                            ("cache_read_tokens", "cache_read_input_tokens"),
                        )
                    }
                )
        stamps = [m.timestamp for m in messages if m.timestamp is not None]
        if is_main:
            started, ended = _ts(self.first_ts), _ts(self.last_ts)
        else:
            started, ended = (stamps[0], stamps[-1]) if stamps else (None, None)
        timing = Timing.model_construct(
            started_at=started,
            ended_at=ended,
            duration_s=(ended - started).total_seconds()
            if started is not None
            and ended is not None
            and (started.tzinfo is None) == (ended.tzinfo is None)
            else None,
        )
        prov_extra: dict[str, Any] = {}
        if len(model_names) > 1:
            prov_extra["models"] = model_names
        if is_main and self.main_lines == 0 and self.sidechain_lines:
            prov_extra["is_sidechain"] = True
        if is_main and self.agent_id is not None:
            prov_extra["agent_id"] = self.agent_id
        provenance = Provenance.model_construct(
            source="claude-code",
            source_file=self.source_file,
            session_id=self.session_id,
            agent="claude-code",
            agent_version=self.version,
            model=model,
            cwd=self.cwd,
            git_branch=self.git_branch,
            line=None,
            executor=None,
            git_commit=None,
            parent_session_id=None,
            extra=prov_extra,
        )
        calls = [call for m in messages for call in m.tool_calls]
        names = (self.init_tools if is_main and self.init_tools else []) + [c.name for c in calls]
        if is_main and self.agent_id:
            trace_id = f"{self.session_id or Path(self.source_file).stem}:{self.agent_id}"
        return Trace.model_construct(
            id=trace_id,
            system_prompt=None,
            messages=messages,
            tools=schemas(names, calls),
            usage=usage,
            cost_usd=cost,
            timing=timing,
            outcome=outcome,
            provenance=provenance,
            subagents=[],
            extra={},
        )

    def _outcome(
        self, messages: list[Message], num_turns: int, result: dict[str, Any] | None
    ) -> Outcome:
        if result is not None:
            failed = result.get("is_error") is True or result.get("subtype") != "success"
            subtype = result.get("subtype")
            errors = result.get("errors")
            return Outcome.model_construct(
                success=not failed,
                error_kind=str(subtype) if failed and subtype is not None else None,
                error_message="; ".join(map(str, errors)) if failed and errors else None,
                num_turns=result["num_turns"]
                if result.get("num_turns").__class__ is int
                else num_turns,
            )
        kind: str | None = None
        message: str | None = None
        last = messages[-1] if messages else None
        if last is None:
            kind = "empty"
        elif last.role == "assistant":
            if last.extra.get("api_error"):
                kind, message = "api_error", last.content[:500] or None
            elif last.tool_calls:
                kind = "interrupted"
        elif last.role == "tool":
            kind = "tool_error" if last.is_error else "interrupted"
            message = last.content[:500] if last.is_error else None
        elif last.content.startswith("[Request interrupted"):
            kind = "interrupted"
        else:
            kind = "no_response"
        return Outcome.model_construct(
            success=kind is None, error_kind=kind, error_message=message, num_turns=num_turns
        )


LINE_TYPES = frozenset(
    ("user", "assistant", "system", "attachment", "summary", "result", "progress",
     "queue-operation", "file-history-snapshot", "last-prompt", "custom-title")
)  # fmt: skip
SNIFF_LINES = 20


def looks_like_transcript(path: Path) -> bool:
    """Whether `path` reads as a Claude Code transcript: one of its first non-blank lines is a
    JSON object of a transcript line type (or carries a session id). An empty file counts (an
    empty session); a CSV, a JSON document or another tool's JSONL does not, so a wrong input
    is one clear error instead of one error per line."""
    seen = 0
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                seen += 1
                try:
                    obj = _loads(raw)
                except _JSONDecodeError:
                    obj = None
                if obj.__class__ is dict and (
                    obj.get("type") in LINE_TYPES or "sessionId" in obj or "session_id" in obj
                ):
                    return True
                if seen >= SNIFF_LINES:
                    return False
    except OSError:
        return True  # parse_file reports it
    return seen == 0


def parse_file(path: Path, report: Report) -> Trace | None:
    """Parse one transcript file; each unusable line goes to `report`, never an exception."""
    name = str(path)
    parser = TranscriptParser(name)
    try:
        handle = open(path, "rb")  # noqa: SIM115 -- closed below; `with` cannot wrap the OSError
    except OSError as exc:
        report(name, 0, f"cannot open: {exc.strerror or exc}")
        return None
    feed = parser.feed
    with handle:
        lineno = 0
        try:
            for lineno, raw in enumerate(handle, 1):
                try:
                    obj = _loads(raw)
                except _JSONDecodeError as exc:
                    if raw.strip():
                        report(name, lineno, f"invalid JSON: {str(exc)[:120]}")
                    continue
                if obj.__class__ is not dict:
                    report(name, lineno, f"not a JSON object: {type(obj).__name__}")
                    continue
                try:
                    feed(obj)
                except (ShapeError, TypeError, ValueError, AttributeError, KeyError) as exc:
                    report(name, lineno, f"unexpected shape: {exc}"[:200])
        except OSError as exc:
            report(name, lineno + 1, f"read error: {exc.strerror or exc}")
    return parser.finish()
