"""Rows in, training lines out: Traces, chat rows, prompt/response rows and preference pairs.

Every SFT line is an OpenAI-messages conversation (shared/reference/training-formats.md): the
record's own system prompt first, else the configured one, else, on an agent's line only, the
coding-agent prompt; the tools schema on tool-use lines, always, and the assistant's turn last.
Peers' users complain most when the system prompt or tool schemas are missing from agent data;
a plain Q&A line gets no agent prompt it would learn to answer under. A trainer fed a
conversation whose tool call has no result, or that ends on a user turn, learns garbage or
crashes mid-epoch. So each line is validated here, and one that fails raises `Invalid` with a
short, countable reason: the sink drops it through `run.drop(...)`, never silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from genson import SchemaBuilder
from pydantic import ValidationError

from bashgym.records import Trace, trace_from_row
from bashgym.text import plain
from bashgym_sinks_nemo_jsonl.options import DEFAULT_SYSTEM_PROMPT, NemoJsonlOptions

ROLES = ("system", "user", "assistant", "tool")
Line = dict[str, Any]
INFERRED = "__inferred_tools__"
NEGATIVE = "__negative__"  # a line of a trace that did not succeed: the sink writes it apart
SUBAGENT = "__subagent__"  # a subagent's own line (`include_subagents`): the manifest counts it
CUT_SHORT = "__cut_short__"  # a negative ending on its last assistant turn: the manifest counts it


class Invalid(ValueError):
    """A record that cannot become a valid training line; the message is the drop reason."""


@dataclass(frozen=True)
class NoNegative:
    """A dropped trace whose negative line could not be made either, and why: not a second
    drop (the trace is dropped once, for its failure), but a count, so the manifest's negatives
    add up to the traces success_only dropped."""

    reason: str


# --- parsing what rows hold -------------------------------------------------------------------


def _is_map(value: Any) -> bool:
    """`isinstance(value, Mapping)`, a plain dict first: the ABC's check was the largest single
    cost of making a transcript's lines (tens of thousands of messages and calls, measured)."""
    return type(value) is dict or isinstance(value, Mapping)


_LONG_NUMBER = re.compile(r"[0-9]{19}")


def _json(text: str) -> Any:
    """`json.loads(text)`, by orjson where it reads the same (3x faster on tool-call arguments):
    not where it would differ, on NaN (it refuses) or an integer past 64 bits (it makes a float
    of it, silently), which json reads exactly."""
    if _LONG_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def _loads(value: Any, what: str) -> Any:
    """A column that holds JSON text or already-parsed values (Parquet gives numpy arrays)."""
    value = plain(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise Invalid(f"{what} is not valid JSON") from None
    return value


def _text(content: Any) -> str:
    """Message content as text; OpenAI content parts (`[{"type": "text", ...}]`) are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(_is_map(p) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text") or "") for p in content)
    raise Invalid("message content is not text")


def _message(raw: Any) -> dict[str, Any]:
    """One message normalized to the OpenAI shape (arguments as JSON text, no null fields)."""
    if not _is_map(raw):
        raise Invalid("message is not an object")
    role = raw.get("role")
    if role not in ROLES:
        raise Invalid("unknown message role")
    out: dict[str, Any] = {"role": role, "content": _text(raw.get("content"))}
    calls = raw.get("tool_calls") or []
    if calls:
        if role != "assistant":
            raise Invalid("tool_calls on a non-assistant message")
        out["tool_calls"] = [_tool_call(c) for c in calls]
    if role == "tool":
        if not raw.get("tool_call_id"):
            raise Invalid("tool message without tool_call_id")
        out["tool_call_id"] = str(raw["tool_call_id"])
        if raw.get("name"):
            out["name"] = str(raw["name"])
    return out


def _tool_call(raw: Any) -> dict[str, Any]:
    if not _is_map(raw):
        raise Invalid("tool call is not an object")
    fn = raw["function"] if _is_map(raw.get("function")) else raw
    name, args = fn.get("name"), fn.get("arguments", "{}")
    if not raw.get("id"):
        raise Invalid("tool call without id")  # `_pair_by_position` gives every call one
    if not isinstance(name, str) or not name:
        raise Invalid("tool call without a function name")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return {"id": str(raw["id"]), "type": "function", "function": {"name": name, "arguments": args}}


def _tools(value: Any) -> list[dict[str, Any]]:
    """A tools column: OpenAI `{"type": "function", "function": {...}}` items or bare functions."""
    value = _loads(value, "tools")
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid("tools is not a list")
    out = []
    for tool in value:
        if not isinstance(tool, Mapping):
            raise Invalid("tool schema is not an object")
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping) or not fn.get("name"):
            raise Invalid("tool schema without a name")
        out.append({"type": "function", "function": dict(fn)})
    return out


# --- validation --------------------------------------------------------------------------------


def validate(
    messages: list[dict[str, Any]], *, mid_system: bool = False, open_end: bool = False
) -> None:
    """Raise `Invalid` unless `messages` is a conversation a trainer can use: system first (and
    later only if `mid_system`), a user turn before any answer, every tool call answered by a
    following tool message (and every tool message answering one), and a non-empty assistant
    turn last. `open_end`: the last assistant turn may be tool calls with no result yet (a
    negative cut short: the agent's next action, as OpenAI's function-calling examples end)."""
    if not messages:
        raise Invalid("no messages")
    pending: set[str] = set()
    seen_user = False
    for i, msg in enumerate(messages):
        role = msg["role"]
        if role == "system" and i:
            if not mid_system:
                raise Invalid("system message not first")
            continue
        if role == "tool":
            if msg["tool_call_id"] not in pending:
                raise Invalid("tool message answers no pending tool call")
            pending.discard(msg["tool_call_id"])
            continue
        if pending:
            raise Invalid("tool call has no tool result")
        if role == "user":
            seen_user = True
        elif role == "assistant":
            if not seen_user:
                raise Invalid("assistant speaks before any user message")
            ids = [c["id"] for c in msg.get("tool_calls", [])]
            if len(set(ids)) != len(ids):
                raise Invalid("duplicate tool call id in one turn")
            pending = set(ids)
    last = messages[-1]
    if pending and not (open_end and last["role"] == "assistant"):
        raise Invalid("tool call has no tool result")
    if last["role"] != "assistant":
        raise Invalid("last message is not the assistant's")
    if not last["content"].strip() and not (open_end and last.get("tool_calls")):
        raise Invalid("final assistant message is empty")


# --- SFT lines -----------------------------------------------------------------------------------


def to_chat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text turns only: tool messages and tool calls go, empty assistant turns go, and adjacent
    assistant texts merge (strict templates refuse two assistant turns in a row). A conversation
    that did not end on assistant text (an agent cut off after a tool result) is skipped: its
    stripped form would pass off a mid-task remark as the final answer."""
    last = messages[-1] if messages else None
    if (
        not last
        or last["role"] != "assistant"
        or last.get("tool_calls")
        or not last["content"].strip()
    ):
        raise Invalid("chat: no final assistant text")
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg["role"] == "tool":
            continue
        msg = {"role": msg["role"], "content": msg["content"]}
        if msg["role"] == "assistant":
            if not msg["content"].strip():
                continue
            if out and out[-1]["role"] == "assistant":
                out[-1]["content"] += "\n\n" + msg["content"]
                continue
        out.append(msg)
    return out


def sft_line(
    raw_messages: list[Any],
    tools: list[dict[str, Any]],
    options: NemoJsonlOptions,
    *,
    system_prompt: str | None = None,
    with_tools: bool = True,
    agent: bool = False,
    open_end: bool = False,
) -> Line:
    """A validated SFT line from messages (any OpenAI-ish shape) and a tools schema; `agent`:
    the messages are an agent's work even if they call no tool (a trace); `open_end`: see
    `validate`."""
    messages = [_message(m) for m in _pair_by_position(raw_messages)]
    own = messages[0]["role"] == "system" if messages else False
    if not own or not messages[0]["content"].strip():
        if own:  # a blank system message says nothing: replaced, or gone when none applies
            messages.pop(0)
        agent = agent or bool(tools) or _uses_tools(messages)
        if system := system_for(options, system_prompt, agent=agent):
            messages.insert(0, {"role": "system", "content": system})
    if options.format == "chat":
        messages = to_chat(messages)
    validate(messages, mid_system=options.mid_conversation_system == "keep", open_end=open_end)
    line: Line = {"messages": messages}
    if options.format == "tool-use" and with_tools:
        line["tools"] = _complete_tools(tools, messages)
        if len(line["tools"]) > len(tools):
            line[INFERRED] = len(line["tools"]) - len(tools)  # the sink counts and removes it
    if options.tool_arguments == "object":  # what chat templates `tojson`; see options
        for msg in messages:
            for call in msg.get("tool_calls", []):
                call["function"]["arguments"] = _arguments_object(call["function"]["arguments"])
    return line


def system_for(options: NemoJsonlOptions, own: Any, *, agent: bool) -> str | None:
    """The system prompt of a line whose messages carry none: the record's own (a
    `system_prompt` column), else the user's `default_system_prompt` (whatever the line is;
    `""`: none), else the coding-agent prompt for an agent's line and none for any other.
    Why not the agent prompt everywhere: a "What is 2+2?" row trained under "finish with a
    short summary of what you changed" teaches that framing for every answer."""
    if isinstance(own, str) and own.strip():
        return own
    if options.default_system_prompt is not None:
        return options.default_system_prompt or None
    return DEFAULT_SYSTEM_PROMPT if agent else None


def _uses_tools(messages: list[dict[str, Any]]) -> bool:
    """Whether a conversation is an agent's: it calls a tool or holds a tool's result."""
    return any(m.get("tool_calls") or m["role"] == "tool" for m in messages)


def _pair_by_position(raw_messages: list[Any]) -> list[Any]:
    """Messages whose tool results all name the call they answer.

    ATIF results may omit `source_call_id` (Harbor's terminus-2 writes none) and the atif
    source pairs them with their step's calls by position; a line must too, or every such
    trace is dropped. A call with no id gets `call_<turn>_<k>`; a result with no
    `tool_call_id` answers the first call of the latest assistant turn not answered yet. A
    result with nothing left to answer stays as it is, and `validate` says why it is dropped.
    Copies: the caller's messages are not changed."""
    out: list[Any] = []
    pending: list[str] = []
    for i, raw in enumerate(raw_messages):
        if not _is_map(raw):
            out.append(raw)
            continue
        msg = dict(raw)
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            calls = []
            for k, call in enumerate(msg["tool_calls"]):
                if _is_map(call) and not call.get("id"):
                    call = {**call, "id": f"call_{i}_{k}"}
                calls.append(call)
            msg["tool_calls"] = calls
            pending = [str(c["id"]) for c in calls if _is_map(c)]
        elif msg.get("role") == "tool":
            if msg.get("tool_call_id"):
                if str(msg["tool_call_id"]) in pending:
                    pending.remove(str(msg["tool_call_id"]))
            elif pending:
                msg["tool_call_id"] = pending.pop(0)
        out.append(msg)
    return out


def _complete_tools(tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[Any]:
    """The schema, plus an entry for any called tool it lacks: a line whose tool calls name
    tools the schema never declares teaches the model to call tools it was not offered. The
    entry's parameters are inferred from the arguments the line's calls pass (genson: the JSON
    types seen, `required` for keys every call passed), so `tools` never shows an empty
    `{"properties": {}}` for a tool called with `file_path` or `command`."""
    known = {t["function"]["name"] for t in tools}
    args: dict[str, list[dict[str, Any]]] = {}
    for msg in messages:
        for call in msg.get("tool_calls", []):
            name = call["function"]["name"]
            if name in known:  # (parsing every call's arguments was ~5% of the sink's time)
                continue
            parsed = _arguments_dict(call["function"]["arguments"])
            args.setdefault(name, [])
            if parsed:
                args[name].append(parsed)
    out = list(tools)  # declared schemas are the record's own: kept as they are
    for name, seen in args.items():
        if name not in known:
            out.append(
                {
                    "type": "function",
                    "function": {"name": name, "description": "", "parameters": _infer(seen)},
                }
            )
    return out


def _infer(calls: list[dict[str, Any]]) -> dict[str, Any]:
    builder = SchemaBuilder(schema_uri=None)
    builder.add_schema({"type": "object", "properties": {}})
    for arguments in calls:
        builder.add_object(arguments)
    return builder.to_schema()


def _arguments_dict(text: str) -> dict[str, Any]:
    try:
        value = _json(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _arguments_object(text: str) -> Any:
    try:
        return _json(text)
    except ValueError:
        raise Invalid("tool call arguments are not valid JSON") from None


def trace_lines(
    row: Mapping[str, Any], options: NemoJsonlOptions, failed: str | None = None
) -> Iterator[Line | Invalid | NoNegative]:
    """The line of the row's Trace (and its subagents' when asked); each one may be Invalid.

    A trace that did not succeed (`failed`: the executor's status, else the trace's own
    outcome) is no SFT target unless `success_only` is off: it is dropped with its reason,
    and its line comes back marked NEGATIVE when `negatives` is on (a DPO rejected answer).
    A failed trace is often no valid SFT line at all (stopped mid-action: a tool call with no
    result, e.g. for repetition or at max_turns): its negative is then `cut_short`, or a
    NoNegative saying why none could be made. An outcome that says nothing (`success` None) is
    not a failure. A subagent's line comes back marked SUBAGENT: it is a line more than the
    rows given, which the counts must say."""
    try:
        trace = trace_from_row(row)
    except (ValidationError, ValueError, TypeError):
        yield Invalid("trace column does not hold a valid Trace")
        return
    todo: list[tuple[Trace, str | None]] = [(trace, failed)]
    while todo:
        current, why = todo.pop(0)
        if options.include_subagents:
            todo.extend((sub, None) for sub in current.subagents)
        if why is None and current.outcome.success is False:
            why = f"trace did not succeed ({current.outcome.error_kind or 'failed'})"
        try:
            line = sft_line(current.openai_messages(), current.openai_tools(), options, agent=True)
        except Invalid as exc:  # a failed trace is dropped for its own cause, not its shape
            yield Invalid(why) if why is not None else exc
            if why is not None and options.success_only and options.negatives:
                line = cut_short(current, options)
                if isinstance(line, dict) and current is not trace:
                    line[SUBAGENT] = True
                yield line
            continue
        if why is not None and options.success_only:
            yield Invalid(why)
            if not options.negatives:
                continue
            line[NEGATIVE] = True
        if current is not trace:
            line[SUBAGENT] = True
        yield line


def cut_short(trace: Trace, options: NemoJsonlOptions) -> Line | NoNegative:
    """The negative line of a failed trace that is no valid conversation as it stands: cut
    after its last assistant turn that says or calls something, which may be tool calls with
    no result (the action the agent was stopped at: what a DPO `rejected` answer or a failure
    analysis wants most). Tool results and user turns after it go. One cut, not a search back
    through the trace: a conversation broken earlier (a stray tool result, content that is no
    text) is a NoNegative with that reason, and so is any chat-format line (`to_chat` keeps
    only a final assistant text)."""
    messages = trace.openai_messages()
    last = next(
        (i for i in range(len(messages) - 1, -1, -1) if _acts(messages[i])),
        None,
    )
    if last is None:
        return NoNegative("no assistant turn")
    try:
        line = sft_line(
            messages[: last + 1], trace.openai_tools(), options, agent=True, open_end=True
        )
    except Invalid as exc:
        return NoNegative(str(exc))
    line[NEGATIVE] = line[CUT_SHORT] = True
    return line


def _acts(message: Mapping[str, Any]) -> bool:
    """An assistant turn that says something or calls a tool (an empty one ends no line)."""
    if message.get("role") != "assistant":
        return False
    content = message.get("content")
    said = content.strip() if isinstance(content, str) else content  # (parts: `_text` reads)
    return bool(message.get("tool_calls") or said)


def chat_line(row: Mapping[str, Any], options: NemoJsonlOptions) -> Line:
    """A `messages` row. A row of the same file with no messages at all (a chat export's
    prompt-only or prompt/response lines, as the prompts source reads such a file: the column
    is there for the chats, empty on the others) is the prompt/response row it is."""
    raw = plain(row.get("messages"))
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return _without_messages(row, options)
    messages = _loads(raw, "messages")
    if not isinstance(messages, list):
        raise Invalid("messages is not a list")
    system = plain(row.get("system_prompt"))
    return sft_line(
        messages,
        _tools(row.get("tools")),
        options,
        system_prompt=system if isinstance(system, str) else None,
    )


def _without_messages(row: Mapping[str, Any], options: NemoJsonlOptions) -> Line:
    """What is really missing: a prompt alone is a task with no answer (not a bad messages
    list), and a prompt with its response is a line of its own."""

    def given(name: str) -> bool:
        value = plain(row.get(name))
        return value is not None and not (isinstance(value, str) and not value.strip())

    if not given(options.prompt_field):
        raise Invalid("no messages")
    if not given(options.response_field):
        raise Invalid("a prompt with no response: nothing to train on")
    return rows_line(row, options)


def rows_line(row: Mapping[str, Any], options: NemoJsonlOptions) -> Line:
    prompt = cell_text(row.get(options.prompt_field), "prompt")
    response = cell_text(row.get(options.response_field), "response")
    system = plain(row.get("system_prompt"))
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    return sft_line(
        messages,
        [],
        options,
        system_prompt=system if isinstance(system, str) else None,
        with_tools=False,
    )


def cell_text(value: Any, what: str) -> str:
    """A prompt or response cell as the text a turn holds, else `Invalid` with the true cause.

    A math Q&A file's answers are numbers (pandas reads `4` as an int, `2.5` as a float), and
    they are as much an answer as text, so a number is written as its text: an int as `4`, a
    float with no fraction as an int (`4.0` -> `4`: pandas makes every int of a column with a
    missing cell a float, and the file said `4`; a file that really says `4.0` loses its `.0`),
    any other float by Python's shortest repr (`2.5`), a bool as JSON writes it (`true`). Empty
    (missing, NaN, blank text) and not text at all (an object or a list) are different causes,
    and a user fixes each differently, so each is its own reason."""
    value = plain(value)
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        exact = value.is_integer() and abs(value) < 2**53  # past that, int text overstates
        value = str(int(value)) if exact else repr(float(value))  # not `np.float64(2.5)`
    if value is None or (isinstance(value, str) and not value.strip()):
        raise Invalid(f"rows: empty {what}")
    if not isinstance(value, str):
        raise Invalid(f"rows: {what} is not text")
    return value


# --- preference pairs ----------------------------------------------------------------------------


def dpo_line(row: Mapping[str, Any], options: NemoJsonlOptions) -> Line:
    """One preference pair in `options.dpo_format`; ties and identical answers carry no signal."""
    prompt = _turns(row.get(options.prompt_field), "user", "prompt")
    chosen = _turns(row.get("chosen"), "assistant", "chosen")
    rejected = _turns(row.get("rejected"), "assistant", "rejected")
    if chosen == rejected:
        raise Invalid("dpo: chosen and rejected are identical")
    _check_margin(row, options)
    if not prompt or prompt[-1]["role"] not in ("user", "tool"):
        raise Invalid("dpo: prompt does not end with a user turn")
    for answer in (chosen, rejected):
        if answer[-1]["role"] != "assistant" or not answer[-1]["content"].strip():
            raise Invalid("dpo: answer does not end with assistant text")
    if options.dpo_format in ("trl", "nemo-rl"):
        turns = [m for m in prompt if m["role"] != "system"]
        if len(turns) != 1 or len(chosen) != 1 or len(rejected) != 1:
            raise Invalid(
                f"dpo: multi-turn pair needs a conversational dpo_format, not {options.dpo_format}"
            )
        return {
            "prompt": turns[0]["content"],
            "chosen": chosen[0]["content"],
            "rejected": rejected[0]["content"],
        }
    if prompt[0]["role"] != "system":
        agent = any(_uses_tools(turns) for turns in (prompt, chosen, rejected))
        if system := system_for(options, plain(row.get("system_prompt")), agent=agent):
            prompt.insert(0, {"role": "system", "content": system})
    if options.dpo_format == "trl-conversational":
        return {"prompt": prompt, "chosen": chosen, "rejected": rejected}
    return {
        "context": prompt,
        "completions": [{"rank": 0, "completion": chosen}, {"rank": 1, "completion": rejected}],
    }


def _turns(value: Any, role: str, what: str) -> list[dict[str, Any]]:
    """Text becomes one `role` turn; a list (or its JSON text) is taken as messages."""
    value = plain(value)
    if isinstance(value, str) and value.lstrip().startswith("["):
        value = _loads(value, what)
    if isinstance(value, str):
        if not value.strip():
            raise Invalid(f"dpo: empty {what}")
        return [{"role": role, "content": value}]
    if not isinstance(value, list) or not value:
        raise Invalid(f"dpo: {what} is neither text nor messages")
    return [_message(m) for m in value]


def _check_margin(row: Mapping[str, Any], options: NemoJsonlOptions) -> None:
    has = [options.chosen_score_field in row, options.rejected_score_field in row]
    if not all(has) and options.min_margin is None:
        return
    good, bad = (
        plain(row.get(options.chosen_score_field)),
        plain(row.get(options.rejected_score_field)),
    )
    if not isinstance(good, int | float) or not isinstance(bad, int | float):
        raise Invalid("dpo: missing score")
    if options.min_margin is None:
        if good <= bad:
            raise Invalid("dpo: chosen does not score above rejected")
    elif good - bad < options.min_margin:
        raise Invalid("dpo: score margin below min_margin")
