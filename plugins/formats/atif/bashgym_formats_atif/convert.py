"""Lossless conversion between ATIF trajectories and BashGym `Trace`s.

Why this exists: ATIF (Agent Trajectory Interchange Format, `ATIF-v1.x`) is the trajectory format
of Harbor / Terminal-Bench: every agent run there is logged as one JSON document (`schema_version`,
`session_id`, `agent`, `steps[]`, `final_metrics`). BashGym reads those documents as training data
and writes its own traces out as ATIF so that Harbor tooling can use them. The conversion is
*lossless in both directions* so BashGym can be a pass-through instead of a lossy filter:

* `trace_to_atif(atif_to_trace(doc)) == doc` for any valid ATIF document (same keys, same values,
  same timestamp strings, same key order; nothing added that the input did not have), and
* `atif_to_trace(trace_to_atif(trace)) == trace` for any Trace (outcome, timing, git provenance,
  subagents, cache-creation tokens... ride along in ATIF's own `extra` slots).

Mapping (ATIF -> Trace):

* `session_id` -> `Trace.id` and `provenance.session_id`; `agent.name` / `version` /
  `model_name` -> `provenance.agent` / `agent_version` / `model`; `provenance.source = "atif"`.
* `agent.tool_definitions` (OpenAI function shape; flat and Anthropic `input_schema` shapes are
  read too) -> `Trace.tools`.
* the first `system` step -> `Trace.system_prompt`; later system steps -> `system` messages.
* `user` step -> `user` message; `agent` step -> `assistant` message (`reasoning_content` ->
  `reasoning`, `tool_calls[].arguments` object -> `ToolCall.arguments` JSON text, step `metrics`
  kept verbatim in `Message.extra["metrics"]`); each `observation.results[]` entry -> one `tool`
  message after it (`source_call_id` -> `tool_call_id`). A result without `source_call_id`
  (allowed by the spec; Harbor's terminus-2 writes them) answers the step's next call that no
  result names, by position, and is written back without one.
* message content parts: text parts are joined; an image part becomes `[image]` (the part
  itself is parked, so it is written back as it was).
* `subagent_trajectory_ref`s stay in their result; `load_atif` / `resolve_subagents` load the
  files they name as nested subagent traces, which the writer leaves out of `extra.bashgym`.
* step `timestamp` -> `Message.timestamp`; first/last step timestamps -> `Trace.timing`.
* `final_metrics` totals (or, where absent, the sums of the step metrics) -> `Trace.usage` and
  `Trace.cost_usd`. ATIF's `prompt_tokens` *includes* cached tokens (spec v1.2), so
  `input_tokens = prompt - cached - cache_creation`, `cache_read_tokens = cached`,
  (except for Harbor's Claude Code converter, whose prompt_tokens leave cache writes out:
  there `input_tokens = prompt - cached`; see `_derive_usage`),
  `cache_creation_tokens` from `extra.total_cache_creation_input_tokens` (or the steps'
  `metrics.extra.cache_creation_input_tokens`), `output_tokens = completion`.
* root `extra` -> `Trace.extra`.

What has no counterpart on the other side is parked, never dropped:

* ATIF-only details (schema_version, notes, agent.extra, reasoning_effort, step extra, unknown
  keys, odd timestamp strings, explicit nulls, irregular step ids, key order, a `final_metrics`
  that does not follow from the usage, ...) go to `Message.extra["atif"]` (per step / tool result)
  and `Trace.provenance.extra["atif"]` (document level). These two keys are reserved.
* Trace-only details go to `extra["bashgym"]` at the root (id, outcome, timing, provenance
  beyond the agent, subagent traces as nested ATIF documents, ...) and per step (is_error and
  names of tool results, raw argument text that is not canonical JSON, a tool result's id when
  it answers a call of another step, since ATIF wants `source_call_id` to name a call of its
  own step, ...). Tool messages with no assistant turn before them become an agent step with
  an empty message, marked `tool_only` there.
* `provenance.source_file` of a trace read from a file is context, not content: it is not
  written back (what a BashGym-written document recorded about its own origin is).

Parked originals are replayed only while they still agree with the Trace's current values, so a
Trace that was edited after reading writes out its edits, not the stale original.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from pydantic_core import to_jsonable_python

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

__all__ = [
    "DEFAULT_SCHEMA_VERSION",
    "atif_to_trace",
    "dump_atif",
    "load_atif",
    "refer_subagents",
    "referenced_files",
    "resolve_subagents",
    "trace_to_atif",
]

DEFAULT_SCHEMA_VERSION = "ATIF-v1.6"
SOURCE = "atif"  # provenance.source of traces read from ATIF
STASH = "atif"  # reserved key in Message.extra / Provenance.extra: ATIF details with no Trace field
BASHGYM = "bashgym"  # reserved key in ATIF extra objects: Trace details with no ATIF field
UNKNOWN_AGENT = "unknown"  # agent.name / agent.version are required by ATIF
CACHE_CREATION_TOTAL = "total_cache_creation_input_tokens"  # in final_metrics.extra
CACHE_CREATION_STEP = "cache_creation_input_tokens"  # in step metrics.extra
CACHE_READ_TOTAL = "total_cache_read_input_tokens"  # in final_metrics.extra (Harbor)
CACHE_READ_STEP = "cache_read_input_tokens"  # in step metrics.extra (Harbor)
IMAGE_MARKER = "[image]"  # an image content part, in the text of a message (as other sources)

_ROLE_OF = {"system": "system", "user": "user", "agent": "assistant"}
_SOURCE_OF = {role: source for source, role in _ROLE_OF.items()}

_ROOT_ORDER = (
    "schema_version",
    "session_id",
    "agent",
    "steps",
    "notes",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
)
_AGENT_ORDER = ("name", "version", "model_name", "tool_definitions", "extra")
_STEP_ORDER = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
)
_CALL_ORDER = ("tool_call_id", "function_name", "arguments")
_OBSERVATION_ORDER = ("results",)
_RESULT_ORDER = ("source_call_id", "content", "subagent_trajectory_ref")

_ROOT_MAPPED = {"schema_version", "session_id", "agent", "steps", "final_metrics", "extra"}
_AGENT_MAPPED = {"name", "version", "model_name", "tool_definitions"}
_AGENT_STEP_MAPPED = {
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
}
_OTHER_STEP_MAPPED = {"step_id", "timestamp", "source", "message", "observation", "extra"}
_RESULT_MAPPED = {"source_call_id", "content"}

# Message fields besides role/content that some ATIF slot may or may not hold.
_MESSAGE_FIELDS = ("tool_calls", "tool_call_id", "name", "is_error", "reasoning", "timestamp")


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()  # "this key was not in the object", as opposed to an explicit null


# --------------------------------------------------------------------------------------------
# public API


def atif_to_trace(doc: dict[str, Any], *, source_file: str | None = None) -> Trace:
    """Read one ATIF trajectory document into a Trace; ValueError says what is wrong and where."""
    _validate(doc)
    doc = copy.deepcopy(doc)  # the Trace owns what it keeps
    try:
        return _read(doc, source_file)
    except ValueError as exc:  # pydantic's ValidationError included: malformed bashgym data
        if str(exc).startswith("not a valid ATIF document"):
            raise
        raise ValueError(
            f"not a valid ATIF document: its extra.{BASHGYM} data does not fit a Trace: {exc}"
        ) from exc


def trace_to_atif(trace: Trace) -> dict[str, Any]:
    """Write a Trace as one ATIF document (a fresh, JSON-serializable dict)."""
    return copy.deepcopy(_write(trace))


def load_atif(path: str | Path, *, subagents: bool = True) -> Trace:
    """Read an ATIF `trajectory.json`; provenance.source_file is set to `path`. With
    `subagents`, each `subagent_trajectory_ref` that names a file beside it becomes a nested
    subagent trace (`resolve_subagents`)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a valid ATIF document: {path} is not JSON: {exc}") from exc
    trace = atif_to_trace(doc, source_file=str(path))
    if subagents:
        resolve_subagents(trace, path)
    return trace


def subagent_refs(trace: Trace) -> list[tuple[Message, dict[str, Any]]]:
    """(tool message, reference) for every `subagent_trajectory_ref` of the trace's results."""
    out = []
    for message in trace.messages:
        refs = _dict(_stash_of(message.extra).get("keys")).get("subagent_trajectory_ref")
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, dict):
                out.append((message, ref))
    return out


def resolve_subagents(
    trace: Trace, path: str | Path, _seen: frozenset[Path] = frozenset()
) -> list[str]:
    """Load the trajectory file each `subagent_trajectory_ref` names (relative to `path`) as a
    subagent trace under the result that refers to it, and return what could not be loaded.

    Why nested: a delegated trajectory (Harbor's summarization agents, any subagent) is part
    of the run that delegated it, not a sample of its own. The reference stays in the result,
    so the writer leaves these subagents out of `extra.bashgym` (the `atif` sink writes each as
    the file its reference names)."""
    path = Path(path)
    seen = _seen | {path.resolve()}
    problems: list[str] = []
    for message, ref in subagent_refs(trace):
        name = ref.get("trajectory_path")
        if not isinstance(name, str) or not name:
            problems.append(f"{path}: subagent {ref.get('session_id')!r} names no trajectory_path")
            continue
        target = path.parent / name
        if not target.resolve().is_relative_to(path.parent.resolve()):  # a name is data
            problems.append(f"{path}: subagent trajectory {name} leaves the folder: not read")
            continue
        if target.resolve() in seen or not target.is_file():
            problems.append(f"{path}: subagent trajectory {name} not found beside it")
            continue
        try:
            sub = load_atif(target, subagents=False)
        except (ValueError, OSError) as exc:
            problems.append(f"{target}: {exc}")
            continue
        problems += resolve_subagents(sub, target, seen)
        stash = sub.provenance.extra.setdefault(STASH, {})
        stash["ref"] = {"trajectory_path": name, "session_id": ref.get("session_id")}
        sub.provenance.parent_session_id = trace.provenance.session_id
        if message.tool_call_id is not None:
            sub.provenance.extra["tool_use_id"] = message.tool_call_id
        trace.subagents.append(sub)
    return problems


def refer_subagents(trace: Trace, path_for: Callable[[Trace], str]) -> tuple[Trace, int]:
    """A copy of `trace` whose subagents are ATIF subagent references where ATIF can hold one.

    ATIF keeps a delegated run as its own trajectory file, named by a `subagent_trajectory_ref`
    in the observation result of the tool call that started it (Harbor's tools follow those;
    they never look in `extra`). A subagent whose spawning call is known (a `tool_use_id` in
    its provenance, as the claude-code source records) gets that reference, its file named by
    `path_for(subagent)` relative to the parent; the writer then leaves it out of
    `extra.bashgym` and the `atif` sink writes it where the reference points. Returns the copy
    and how many subagents found no tool result to hang a reference on (they stay inline in
    `extra.bashgym.subagents`). Nested subagents are handled the same way, level by level."""
    out = trace.model_copy(deep=True)
    inline = 0
    results = {m.tool_call_id: m for m in out.messages if m.role == "tool" and m.tool_call_id}
    for k, sub in enumerate(out.subagents):
        sub, nested = refer_subagents(sub, path_for)
        out.subagents[k] = sub
        inline += nested
        stash = _stash_of(sub.provenance.extra)
        if stash.get("ref"):
            continue  # read from a reference: it already has its file
        result = results.get(str(sub.provenance.extra.get("tool_use_id")))
        if result is None:
            inline += 1
            continue
        session = sub.provenance.session_id if sub.provenance.session_id is not None else sub.id
        result_stash = result.extra.setdefault(STASH, {})
        sub_stash = sub.provenance.extra.setdefault(STASH, {})
        if not isinstance(result_stash, dict) or not isinstance(sub_stash, dict):
            inline += 1  # a producer's own value under the reserved key: left as it is
            continue
        ref = {"session_id": session, "trajectory_path": path_for(sub)}
        keys = result_stash.setdefault("keys", {})
        keys.setdefault("subagent_trajectory_ref", []).append(ref)
        sub_stash["ref"] = dict(ref)
    return out, inline


def referenced_files(path: str | Path) -> list[Path]:
    """The files an ATIF document's `subagent_trajectory_ref`s name (whether or not they
    exist), read without building a Trace: a source uses it to keep them from being samples."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return []
    out = []
    for step in doc.get("steps") or [] if isinstance(doc, dict) else []:
        observation = step.get("observation") if isinstance(step, dict) else None
        for result in _dict(observation).get("results") or []:
            for ref in _dict(result).get("subagent_trajectory_ref") or []:
                name = _dict(ref).get("trajectory_path")
                if isinstance(name, str) and name:
                    out.append(path.parent / name)
    return out


def dump_atif(trace: Trace, path: str | Path) -> Path:
    """Write `trace` to `path` as ATIF JSON (UTF-8, 2-space indent); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(trace_to_atif(trace), ensure_ascii=False, indent=2)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# validation


def _bad(where: str, problem: str) -> NoReturn:
    at = f" at {where}" if where else ""
    raise ValueError(f"not a valid ATIF document{at}: {problem}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES = {
    "a string": lambda v: isinstance(v, str),
    "an integer": _is_int,
    "a number": _is_number,
    "an object": lambda v: isinstance(v, dict),
    "an array": lambda v: isinstance(v, list),
    "a string or an array of content parts": lambda v: isinstance(v, (str, list)),
}


def _field(
    obj: dict[str, Any],
    key: str,
    where: str,
    expected: str,
    *,
    required: bool = False,
    nullable: bool = True,
) -> None:
    if key not in obj:
        if required:
            _bad(where, f"'{key}' is missing")
        return
    value = obj[key]
    if value is None and nullable and not required:
        return
    if not _TYPES[expected](value):
        _bad(where, f"'{key}' must be {expected}, got {_kind(value)}")


def _check_metrics(metrics: Any, where: str, total: bool) -> None:
    if not isinstance(metrics, dict):
        _bad(where, f"metrics must be an object, got {_kind(metrics)}")
    prefix = "total_" if total else ""
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        _field(metrics, prefix + key, where, "an integer")
    _field(metrics, prefix + "cost_usd", where, "a number")
    if total:
        _field(metrics, "total_steps", where, "an integer")
    _field(metrics, "extra", where, "an object")


def _metrics_ok(metrics: Any) -> bool:
    try:
        _check_metrics(metrics, "", total=False)
    except ValueError:
        return False
    return True


def _validate(doc: Any) -> None:
    if not isinstance(doc, dict):
        _bad("", f"expected a JSON object with a 'steps' array, got {_kind(doc)}")
    if "steps" not in doc:
        _bad("", "'steps' is missing (an ATIF trajectory is an object with a 'steps' array)")
    _field(doc, "steps", "", "an array", required=True)
    _field(doc, "schema_version", "", "a string", required=True)
    _field(doc, "session_id", "", "a string", required=True)
    _field(doc, "agent", "", "an object", required=True)
    _field(doc, "notes", "", "a string")
    _field(doc, "extra", "", "an object")
    _field(_dict(doc.get("extra")), BASHGYM, "extra", "an object", nullable=False)
    agent = doc["agent"]
    _field(agent, "name", "agent", "a string", required=True)
    _field(agent, "version", "agent", "a string", required=True)
    _field(agent, "model_name", "agent", "a string")
    _field(agent, "tool_definitions", "agent", "an array")
    _field(agent, "extra", "agent", "an object")
    _tools_from(agent.get("tool_definitions"))  # every definition needs a name
    if doc.get("final_metrics") is not None:
        _check_metrics(doc["final_metrics"], "final_metrics", total=True)
    for i, step in enumerate(doc["steps"]):
        _validate_step(step, f"steps[{i}]")


def _validate_step(step: Any, where: str) -> None:
    if not isinstance(step, dict):
        _bad(where, f"a step must be an object, got {_kind(step)}")
    if isinstance(step.get("step_id"), (int, str)) and not isinstance(step.get("step_id"), bool):
        where = f"{where} (step_id {step['step_id']})"
    _field(step, "step_id", where, "an integer", required=True)
    _field(step, "source", where, "a string", required=True)
    if step["source"] not in _ROLE_OF:
        _bad(where, f"'source' must be one of system, user, agent; got {step['source']!r}")
    _field(step, "message", where, "a string or an array of content parts", required=True)
    _field(step, "timestamp", where, "a string")
    _field(step, "model_name", where, "a string")
    _field(step, "reasoning_content", where, "a string")
    _field(step, "tool_calls", where, "an array")
    _field(step, "observation", where, "an object")
    _field(step, "extra", where, "an object")
    _field(_dict(step.get("extra")), BASHGYM, f"{where}.extra", "an object", nullable=False)
    for j, call in enumerate(step.get("tool_calls") or []):
        at = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict):
            _bad(at, f"a tool call must be an object, got {_kind(call)}")
        _field(call, "tool_call_id", at, "a string", required=True)
        _field(call, "function_name", at, "a string", required=True)
        _field(call, "arguments", at, "an object", required=True)
    observation = step.get("observation")
    if observation is not None:
        _field(observation, "results", f"{where}.observation", "an array", required=True)
        for j, result in enumerate(observation["results"]):
            at = f"{where}.observation.results[{j}]"
            if not isinstance(result, dict):
                _bad(at, f"a result must be an object, got {_kind(result)}")
            _field(result, "source_call_id", at, "a string")
            _field(result, "content", at, "a string or an array of content parts")
            _field(result, "subagent_trajectory_ref", at, "an array")
    if step.get("metrics") is not None:
        _check_metrics(step["metrics"], f"{where}.metrics", total=False)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------------------------
# shared pieces: both directions must agree on these exactly


def _identical(a: Any, b: Any) -> bool:
    """Equal as JSON text: types (1 vs 1.0 vs true) and key order count; _ABSENT only matches
    itself. Used to decide whether the writer would reproduce an input byte for byte."""
    if a is _ABSENT or b is _ABSENT:
        return a is b
    try:
        return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)
    except (TypeError, ValueError):
        return a == b


def _ordered(
    obj: dict[str, Any], canonical: tuple[str, ...], order: list[str] | None = None
) -> dict[str, Any]:
    """`obj` with its keys in the recorded `order` (when it still fits) or canonical order."""
    if order is not None and len(order) == len(obj) and set(order) == set(obj):
        return {key: obj[key] for key in order}
    keys = [key for key in canonical if key in obj] + [key for key in obj if key not in canonical]
    return {key: obj[key] for key in keys}


def _order_if_unusual(obj: dict[str, Any], canonical: tuple[str, ...]) -> list[str] | None:
    actual = list(obj)
    return actual if list(_ordered(obj, canonical)) != actual else None


def _format_ts(value: datetime) -> str:
    """ISO 8601 the way ATIF producers write it: `Z` for UTC, no more sub-second digits than
    needed (`2026-11-21T05:22:18.573Z`)."""
    micro = value.microsecond
    spec = "seconds" if micro == 0 else "milliseconds" if micro % 1000 == 0 else "microseconds"
    offset = value.utcoffset()
    if offset is not None and not offset:
        return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
    return value.isoformat(timespec=spec)


def _text_of(value: Any) -> str:
    """Text of a message/content value: a string, or the text parts of a content-part array."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = []
    for part in value:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "image":
            parts.append(IMAGE_MARKER)  # the bytes stay in the parked original
    return "\n".join(parts)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _args_for_atif(text: str) -> tuple[dict[str, Any], bool]:
    """ATIF `arguments` object for a ToolCall's argument text, and whether reading that object
    back (`json.dumps`) gives the very same text."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        value = _ABSENT
    if isinstance(value, dict):
        return value, json.dumps(value, ensure_ascii=False) == text
    return {"_raw": text}, False


def _tool_from_definition(definition: Any, where: str) -> ToolSchema:
    if not isinstance(definition, dict):
        _bad(where, f"a tool definition must be an object, got {_kind(definition)}")
    spec = definition["function"] if isinstance(definition.get("function"), dict) else definition
    name = spec.get("name")
    if not isinstance(name, str):
        _bad(
            where,
            "tool definition has no 'name' (expected OpenAI function shape "
            "{type: function, function: {name, description, parameters}})",
        )
    description = spec.get("description")
    parameters = spec.get("parameters", spec.get("input_schema"))
    fields: dict[str, Any] = {
        "name": name,
        "description": description if isinstance(description, str) else "",
    }
    if isinstance(parameters, dict):
        fields["parameters"] = copy.deepcopy(parameters)
    return ToolSchema(**fields)


def _tools_from(raw: Any) -> list[ToolSchema]:
    if not isinstance(raw, list):
        return []
    return [_tool_from_definition(d, f"agent.tool_definitions[{i}]") for i, d in enumerate(raw)]


def _tools_to(tools: list[ToolSchema]) -> Any:
    return [tool.to_openai() for tool in tools] if tools else _ABSENT


def _derive_usage(final_metrics: Any, steps: list[dict[str, Any]]) -> tuple[Usage, float | None]:
    """Trace.usage / cost_usd implied by final_metrics, falling back field by field to the sums
    of the step metrics."""
    metrics = [s["metrics"] for s in steps if isinstance(s.get("metrics"), dict)]
    totals = _dict(final_metrics)

    def total(total_key: str, step_key: str) -> Any:
        if totals.get(total_key) is not None:
            return totals[total_key]
        values = [m[step_key] for m in metrics if m.get(step_key) is not None]
        return sum(values) if values else None

    prompt = total("total_prompt_tokens", "prompt_tokens") or 0
    completion = total("total_completion_tokens", "completion_tokens") or 0
    cached = total("total_cached_tokens", "cached_tokens") or 0
    cost = total("total_cost_usd", "cost_usd")
    creation = _dict(totals.get("extra")).get(CACHE_CREATION_TOTAL)
    if not _is_int(creation):
        values = [_dict(m.get("extra")).get(CACHE_CREATION_STEP) for m in metrics]
        creation = sum(v for v in values if _is_int(v))
    # The spec: prompt_tokens is all input, cached and not, so cache writes are in it and
    # input = prompt - cached - creation. Harbor's Claude Code converter sets prompt_tokens to
    # Anthropic's input_tokens + cache reads, leaving cache writes out, and copies Anthropic's
    # usage into `extra` (cache_read_input_tokens beside cache_creation_input_tokens): there
    # input = prompt - cached. A prompt smaller than cached + creation is that convention too.
    anthropic_dump = CACHE_READ_TOTAL in _dict(totals.get("extra")) or any(
        CACHE_READ_STEP in _dict(m.get("extra")) for m in metrics
    )
    uncached = prompt - cached
    if not anthropic_dump and uncached >= creation:
        uncached -= creation
    usage = Usage(
        input_tokens=max(0, uncached),
        output_tokens=completion,
        cache_read_tokens=cached,
        cache_creation_tokens=creation,
    )
    return usage, cost


def _default_final_metrics(usage: Usage, cost: float | None, steps: list[dict[str, Any]]) -> Any:
    """What the writer emits when nothing was parked: no final_metrics when the steps already
    imply the usage, else totals built from the usage."""
    if _derive_usage(_ABSENT, steps) == (usage, cost):
        return _ABSENT
    out: dict[str, Any] = {
        "total_prompt_tokens": usage.input_tokens
        + usage.cache_read_tokens
        + usage.cache_creation_tokens,
        "total_completion_tokens": usage.output_tokens,
        "total_cached_tokens": usage.cache_read_tokens,
    }
    if cost is not None:
        out["total_cost_usd"] = cost
    out["total_steps"] = len(steps)
    if usage.cache_creation_tokens:
        out["extra"] = {CACHE_CREATION_TOTAL: usage.cache_creation_tokens}
    return out


def _derive_timing(steps: list[dict[str, Any]]) -> Timing:
    parsed = (parse_timestamp(step.get("timestamp")) for step in steps)
    stamps = [t for t in parsed if t is not None]
    if not stamps:
        return Timing()
    try:
        duration = (stamps[-1] - stamps[0]).total_seconds()
    except TypeError:  # naive and aware timestamps mixed
        duration = None
    return Timing(started_at=stamps[0], ended_at=stamps[-1], duration_s=duration)


def _split_bashgym(extra: Any) -> tuple[dict[str, Any], Any]:
    """(our data, the extra value without it). Only a non-empty object under `bashgym` is ours;
    anything else stays foreign data."""
    if isinstance(extra, dict) and isinstance(extra.get(BASHGYM), dict) and extra[BASHGYM]:
        return extra[BASHGYM], {k: v for k, v in extra.items() if k != BASHGYM}
    return {}, extra


def _trace_extra_of(raw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(root bashgym data, Trace.extra) for a root `extra` value."""
    ours, rest = _split_bashgym(raw)
    trace_extra = dict(rest) if isinstance(rest, dict) else {}
    if "extra" in ours:
        trace_extra[BASHGYM] = ours["extra"]
    return ours, trace_extra


def _compose_root_extra(trace_extra: dict[str, Any], ours: dict[str, Any]) -> Any:
    out = {k: v for k, v in trace_extra.items() if k != BASHGYM}
    ours = dict(ours)
    if BASHGYM in trace_extra:
        ours["extra"] = trace_extra[BASHGYM]
    if ours:
        out[BASHGYM] = ours
    return out if out else _ABSENT


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value)


# --------------------------------------------------------------------------------------------
# ATIF -> Trace


def _read(doc: dict[str, Any], source_file: str | None) -> Trace:
    stash: dict[str, Any] = {}
    ours, trace_extra = _trace_extra_of(doc.get("extra", _ABSENT))

    keys = {k: v for k, v in doc.items() if k not in _ROOT_MAPPED}
    if doc["schema_version"] != DEFAULT_SCHEMA_VERSION:
        keys["schema_version"] = doc["schema_version"]
    if keys:
        stash["keys"] = keys
    order = _order_if_unusual(doc, _ROOT_ORDER)
    if order:
        stash["order"] = order

    agent = doc["agent"]
    model = agent.get("model_name")
    agent_stash: dict[str, Any] = {}
    agent_keys = {k: v for k, v in agent.items() if k not in _AGENT_MAPPED}
    if agent_keys:
        agent_stash["keys"] = agent_keys
    if "model_name" in agent and model is None:
        agent_stash["null_model_name"] = True
    raw_tools = agent.get("tool_definitions", _ABSENT)
    tools = _tools_from(raw_tools)
    if not _identical(_tools_to(tools), raw_tools):
        agent_stash["tool_definitions"] = raw_tools
    order = _order_if_unusual(agent, _AGENT_ORDER)
    if order:
        agent_stash["order"] = order
    if agent_stash:
        stash["agent"] = agent_stash

    steps = doc["steps"]
    no_system_prompt = bool(ours.get("no_system_prompt"))
    system_prompt: str | None = None
    messages: list[Message] = []
    for i, step in enumerate(steps):
        primary, results = _read_step(i, step, model)
        if (
            primary is not None
            and primary.role == "system"
            and system_prompt is None
            and not no_system_prompt
        ):
            system_prompt = primary.content
            rest = primary.model_dump(
                mode="json", exclude={"role", "content"}, exclude_defaults=True
            )
            if rest:
                stash["system_step"] = rest
            if messages:
                stash["system_position"] = len(messages)
        elif primary is not None:
            messages.append(primary)
        messages.extend(results)

    usage, cost = _derive_usage(doc.get("final_metrics", _ABSENT), steps)
    if "usage" in ours:
        usage = Usage.model_validate(ours["usage"])
    if "cost_usd" in ours:
        cost = ours["cost_usd"]
    cost = float(cost) if cost is not None else None  # as Trace.cost_usd will hold it
    raw_final = doc.get("final_metrics", _ABSENT)
    if not _identical(_default_final_metrics(usage, cost, steps), raw_final):
        if raw_final is _ABSENT:
            stash["final_metrics_absent"] = True
        else:
            stash["final_metrics"] = raw_final

    if not ours and not _identical(_compose_root_extra(trace_extra, {}), doc.get("extra", _ABSENT)):
        stash["extra"] = doc["extra"]

    timing = Timing.model_validate(ours["timing"]) if "timing" in ours else _derive_timing(steps)

    overrides = _dict(ours.get("provenance"))
    fields: dict[str, Any] = {
        "source": SOURCE,
        "session_id": doc["session_id"],
        "agent": agent["name"],
        "agent_version": agent["version"],
        "model": model,
    }
    if source_file is not None:
        fields["source_file"] = source_file
        if "source_file" not in overrides:
            stash["source_file"] = source_file  # context, not content: don't write it back
    fields.update(overrides)
    provenance_extra = dict(_dict(overrides.get("extra")))
    if stash:
        provenance_extra[STASH] = stash
    fields["extra"] = provenance_extra

    subagents = []
    for k, sub in enumerate(ours.get("subagents") or []):
        try:
            subagents.append(atif_to_trace(sub))
        except ValueError as exc:
            raise ValueError(f"extra.{BASHGYM}.subagents[{k}]: {exc}") from exc

    return Trace(
        id=ours.get("id", doc["session_id"]),
        system_prompt=system_prompt,
        messages=messages,
        tools=tools,
        usage=usage,
        cost_usd=cost,
        timing=timing,
        outcome=Outcome.model_validate(ours.get("outcome") or {}),
        provenance=Provenance.model_validate(fields),
        subagents=subagents,
        extra=trace_extra,
    )


def _read_step(
    i: int,
    step: dict[str, Any],
    agent_model: str | None,
) -> tuple[Message | None, list[Message]]:
    """The step's own message (None for a tool-results-only step BashGym wrote) and one tool
    message per observation result."""
    source = step["source"]
    ours, extra_rest = _split_bashgym(step.get("extra", _ABSENT))

    observation = step.get("observation", _ABSENT)
    results = observation["results"] if isinstance(observation, dict) else []
    own_ids = _own_call_ids(step.get("tool_calls")) if source == "agent" else set()
    ours_results = _dict(ours.get("results"))
    paired = _pair_by_position(step.get("tool_calls"), results, ours_results, own_ids)
    tool_messages = [
        _read_result(result, _dict(ours_results.get(str(j))), own_ids, paired.get(j))
        for j, result in enumerate(results)
    ]
    if ours.get("tool_only"):
        return None, tool_messages

    is_agent = source == "agent"
    mapped = _AGENT_STEP_MAPPED if is_agent else _OTHER_STEP_MAPPED
    stash: dict[str, Any] = {}
    keys = {k: v for k, v in step.items() if k not in mapped}
    raw: dict[str, Any] = {}
    absent: list[str] = []
    if step["step_id"] != i + 1 or not _is_int(step["step_id"]):
        keys["step_id"] = step["step_id"]
    if "extra" in step and not (ours and extra_rest == {}):
        keys["extra"] = extra_rest  # what is left once our data is out (the writer re-adds it)

    fields: dict[str, Any] = {"role": _ROLE_OF[source]}
    if "timestamp" in step:
        fields["timestamp"] = parse_timestamp(step["timestamp"])
        if fields["timestamp"] is None or _format_ts(fields["timestamp"]) != step["timestamp"]:
            raw["timestamp"] = step["timestamp"]
    fields["content"] = _text_of(step["message"])
    if not isinstance(step["message"], str):
        raw["message"] = step["message"]

    message_extra = dict(_dict(_dict(ours.get("message")).get("extra")))
    if is_agent:
        default_model = agent_model if agent_model is not None else _ABSENT
        model = step.get("model_name", _ABSENT)
        if not _identical(model, default_model):
            if model is _ABSENT:
                absent.append("model_name")
            else:
                keys["model_name"] = model
        reasoning = step.get("reasoning_content", _ABSENT)
        if isinstance(reasoning, str):
            fields["reasoning"] = reasoning
        elif reasoning is None:
            raw["reasoning_content"] = None
        calls = step.get("tool_calls", _ABSENT)
        if calls is None or calls == []:
            raw["tool_calls"] = calls
        elif calls is not _ABSENT:
            fields["tool_calls"], call_stash = _read_calls(calls, _dict(ours.get("arguments")))
            if call_stash:
                stash["tool_calls"] = call_stash
        if "metrics" in step:
            message_extra["metrics"] = step["metrics"]

    if observation is None:
        stash["observation"] = None
    elif observation is not _ABSENT:
        rest = {k: v for k, v in observation.items() if k != "results"}
        if rest or not results or source == "user":
            stash["observation"] = rest  # also marks a user step that carries results
        order = _order_if_unusual(observation, _OBSERVATION_ORDER)
        if order:
            stash["observation_order"] = order

    if keys:
        stash["keys"] = keys
    if raw:
        stash["raw"] = raw
    if absent:
        stash["absent"] = absent
    order = _order_if_unusual(step, _STEP_ORDER)
    if order:
        stash["order"] = order
    if stash:
        message_extra[STASH] = stash
    fields.update({k: v for k, v in _dict(ours.get("message")).items() if k != "extra"})
    fields["extra"] = message_extra
    return Message.model_validate(fields), tool_messages


def _read_calls(
    calls: list[dict[str, Any]],
    raw_arguments: dict[str, Any],
) -> tuple[list[ToolCall], dict[str, Any]]:
    out, stash = [], {}
    for j, call in enumerate(calls):
        text = raw_arguments.get(str(j))
        if not (isinstance(text, str) and _args_for_atif(text)[0] == call["arguments"]):
            text = json.dumps(call["arguments"], ensure_ascii=False)
        out.append(ToolCall(id=call["tool_call_id"], name=call["function_name"], arguments=text))
        residual: dict[str, Any] = {}
        keys = {k: v for k, v in call.items() if k not in _CALL_ORDER}
        if keys:
            residual["keys"] = keys
        order = _order_if_unusual(call, _CALL_ORDER)
        if order:
            residual["order"] = order
        if residual:
            stash[str(j)] = residual
    return out, stash


def _own_call_ids(calls: Any) -> set[str]:
    return {c["tool_call_id"] for c in calls or [] if isinstance(c, dict)}


def _pair_by_position(
    calls: Any, results: list[Any], ours: dict[str, Any], own_ids: set[str]
) -> dict[int, str]:
    """Result position -> the call it answers, for results without a `source_call_id`.

    The spec allows leaving it out, and agents without native tool calling write their
    observations so (Harbor's terminus-2: one result per command, in order): each such result
    answers the step's next call that no result names, by position. A result BashGym wrote
    without an id (`unpaired`) stays without one."""
    if not isinstance(calls, list) or not calls:
        return {}
    named = {r.get("source_call_id") for r in results if isinstance(r, dict)}
    free = [
        c["tool_call_id"]
        for c in calls
        if isinstance(c, dict)
        and c.get("tool_call_id") in own_ids
        and c["tool_call_id"] not in named
    ]
    out: dict[int, str] = {}
    for j, result in enumerate(results):
        if not free:
            break
        if result.get("source_call_id") is None and not _dict(ours.get(str(j))).get("unpaired"):
            out[j] = free.pop(0)
    return out


def _read_result(
    result: dict[str, Any], ours: dict[str, Any], own_ids: set[str], paired: str | None = None
) -> Message:
    stash: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    ours = {k: v for k, v in ours.items() if k != "unpaired"}
    call_id = result.get("source_call_id", _ABSENT)
    if paired is not None:
        stash["paired"] = paired  # no source_call_id in the document; paired by position
    if call_id is None or (isinstance(call_id, str) and call_id not in own_ids):
        raw["source_call_id"] = call_id  # null, or an id that is not one of this step's calls
    content = result.get("content", _ABSENT)
    if content is _ABSENT:
        stash["absent"] = ["content"]
    elif not isinstance(content, str):
        raw["content"] = content
    keys = {k: v for k, v in result.items() if k not in _RESULT_MAPPED}
    if keys:
        stash["keys"] = keys
    if raw:
        stash["raw"] = raw
    order = _order_if_unusual(result, _RESULT_ORDER)
    if order:
        stash["order"] = order
    extra = dict(_dict(ours.get("extra")))
    if stash:
        extra[STASH] = stash
    fields = {
        "role": "tool",
        "content": _text_of(None if content is _ABSENT else content),
        "tool_call_id": call_id if isinstance(call_id, str) else paired,
    }
    fields.update({k: v for k, v in ours.items() if k != "extra"})
    fields["extra"] = extra
    return Message.model_validate(fields)


# --------------------------------------------------------------------------------------------
# Trace -> ATIF


def _stash_of(extra: dict[str, Any]) -> dict[str, Any]:
    return _dict(extra.get(STASH))


def _leftovers(message: Message, native: set[str], consumed: set[str]) -> dict[str, Any]:
    """Message fields (and extra keys) that have no ATIF slot where `message` is written."""
    out: dict[str, Any] = {}
    defaults = Message(role=message.role)
    names = [
        f
        for f in _MESSAGE_FIELDS
        if f not in native and getattr(message, f) != getattr(defaults, f)
    ]
    if names:
        out.update(message.model_dump(mode="json", include=set(names)))
    rest = {k: v for k, v in message.extra.items() if k not in consumed}
    if rest:
        out["extra"] = _jsonable(rest)
    return out


def _write(trace: Trace) -> dict[str, Any]:
    provenance = trace.provenance
    stash = _stash_of(provenance.extra)
    ours: dict[str, Any] = {}

    # --- steps
    sequence: list[tuple[bool, Message]] = [(False, m) for m in trace.messages]
    if trace.system_prompt is not None:
        prompt = Message.model_validate(
            {**_dict(stash.get("system_step")), "role": "system", "content": trace.system_prompt}
        )
        position = stash.get("system_position", 0)
        first_system = next(
            (k for k, m in enumerate(trace.messages) if m.role == "system"), len(trace.messages)
        )
        position = min(position if _is_int(position) else 0, first_system)
        sequence.insert(max(position, 0), (True, prompt))
    elif any(m.role == "system" for m in trace.messages):
        ours["no_system_prompt"] = True

    groups: list[tuple[Message | None, list[Message]]] = []
    for is_prompt, message in sequence:
        if message.role == "tool" and not is_prompt:
            if groups and _takes_results(groups[-1][0]):
                groups[-1][1].append(message)
            else:
                groups.append((None, [message]))
        else:
            groups.append((message, []))
    steps = [
        _write_step(i, primary, results, provenance.model)
        for i, (primary, results) in enumerate(groups)
    ]

    # --- agent
    agent_stash = _dict(stash.get("agent"))
    agent: dict[str, Any] = {
        "name": provenance.agent if provenance.agent is not None else UNKNOWN_AGENT,
        "version": (
            provenance.agent_version if provenance.agent_version is not None else UNKNOWN_AGENT
        ),
    }
    if provenance.model is not None:
        agent["model_name"] = provenance.model
    elif agent_stash.get("null_model_name"):
        agent["model_name"] = None
    if (
        "tool_definitions" in agent_stash
        and _tools_from(agent_stash["tool_definitions"]) == trace.tools
    ):
        agent["tool_definitions"] = agent_stash["tool_definitions"]
    elif trace.tools:
        agent["tool_definitions"] = _tools_to(trace.tools)
    agent.update(_dict(agent_stash.get("keys")))
    agent = _ordered(agent, _AGENT_ORDER, agent_stash.get("order"))

    # --- provenance the ATIF agent/session fields cannot carry
    session_id = provenance.session_id if provenance.session_id is not None else trace.id
    over: dict[str, Any] = {}
    if provenance.session_id is None:
        over["session_id"] = None
    if provenance.agent is None:
        over["agent"] = None
    if provenance.agent_version is None:
        over["agent_version"] = None
    if provenance.source != SOURCE:
        over["source"] = provenance.source
        over["source_file"] = provenance.source_file
    elif provenance.source_file != stash.get("source_file"):
        over["source_file"] = provenance.source_file
    for name in ("line", "executor", "cwd", "git_branch", "git_commit", "parent_session_id"):
        if getattr(provenance, name) is not None:
            over[name] = getattr(provenance, name)
    provenance_extra = {
        k: v for k, v in provenance.extra.items() if not (k == STASH and isinstance(v, dict))
    }
    if provenance_extra:
        over["extra"] = _jsonable(provenance_extra)
    if trace.id != session_id:
        ours["id"] = trace.id
    if over:
        ours["provenance"] = over

    # --- usage and cost: parked final_metrics while it still adds up, else the default
    target = (trace.usage, trace.cost_usd)
    if "final_metrics" in stash and _derive_usage(stash["final_metrics"], steps) == target:
        final = stash["final_metrics"]
    elif stash.get("final_metrics_absent") and _derive_usage(_ABSENT, steps) == target:
        final = _ABSENT
    else:
        final = _default_final_metrics(trace.usage, trace.cost_usd, steps)
    usage, cost = _derive_usage(final, steps)
    if usage != trace.usage:
        ours["usage"] = trace.usage.model_dump(mode="json")
    if cost != trace.cost_usd:
        ours["cost_usd"] = trace.cost_usd

    if trace.timing != _derive_timing(steps):
        ours["timing"] = trace.timing.model_dump(mode="json", exclude_defaults=True)
    if trace.outcome != Outcome():
        ours["outcome"] = trace.outcome.model_dump(mode="json", exclude_defaults=True)
    inline = [sub for sub in trace.subagents if not _stash_of(sub.provenance.extra).get("ref")]
    if inline:  # subagents read from a subagent_trajectory_ref stay their own files
        ours["subagents"] = [_write(sub) for sub in inline]

    # --- root
    doc: dict[str, Any] = {
        "schema_version": DEFAULT_SCHEMA_VERSION,
        "session_id": session_id,
        "agent": agent,
        "steps": steps,
    }
    if final is not _ABSENT:
        doc["final_metrics"] = final
    doc.update(_dict(stash.get("keys")))
    if "extra" in stash and not ours and _trace_extra_of(stash["extra"])[1] == trace.extra:
        doc["extra"] = stash["extra"]
    else:
        extra = _compose_root_extra(_jsonable(trace.extra), ours)
        if extra is not _ABSENT:
            doc["extra"] = extra
    return _ordered(doc, _ROOT_ORDER, stash.get("order"))


def _takes_results(primary: Message | None) -> bool:
    """Whether tool messages right after `primary` belong in its step's observation."""
    if primary is None or primary.role in ("assistant", "system"):
        return True
    return primary.role == "user" and "observation" in _stash_of(primary.extra)


def _write_step(
    i: int, primary: Message | None, results: list[Message], model: str | None
) -> dict[str, Any]:
    ours: dict[str, Any] = {}
    written_results = []
    own_ids = (
        {call.id for call in primary.tool_calls}
        if primary is not None and primary.role == "assistant"
        else set()
    )
    for j, message in enumerate(results):
        result, left = _write_result(message, own_ids)
        written_results.append(result)
        if left:
            ours.setdefault("results", {})[str(j)] = left
    if own_ids:  # what the reader would pair by position must be what the trace pairs
        named = {r.get("source_call_id") for r in written_results}
        free = [c.id for c in primary.tool_calls if c.id not in named]  # type: ignore[union-attr]
        for j, (message, result) in enumerate(zip(results, written_results, strict=True)):
            if result.get("source_call_id") is not None or not free:
                continue
            if message.tool_call_id == free[0]:
                free.pop(0)
            else:
                ours.setdefault("results", {}).setdefault(str(j), {})["unpaired"] = True

    if primary is None:
        ours = {"tool_only": True, **ours}
        return {
            "step_id": i + 1,
            "source": "agent",
            "message": "",
            "observation": {"results": written_results},
            "extra": {BASHGYM: ours},
        }

    stash = _stash_of(primary.extra)
    raw = _dict(stash.get("raw"))
    absent = set(stash.get("absent") or [])
    keys = dict(_dict(stash.get("keys")))
    source = _SOURCE_OF.get(primary.role, "user")
    step: dict[str, Any] = {"step_id": i + 1, "source": source}

    if "timestamp" in raw and parse_timestamp(raw["timestamp"]) == primary.timestamp:
        step["timestamp"] = raw["timestamp"]
    elif primary.timestamp is not None:
        step["timestamp"] = _format_ts(primary.timestamp)
    if "message" in raw and _text_of(raw["message"]) == primary.content:
        step["message"] = raw["message"]
    else:
        step["message"] = primary.content

    native = {"timestamp"}
    consumed = {STASH} if isinstance(primary.extra.get(STASH), dict) else set()
    if source == "agent":
        native |= {"reasoning", "tool_calls"}
        if model is not None and "model_name" not in absent:
            step["model_name"] = model
        if primary.reasoning is not None:
            step["reasoning_content"] = primary.reasoning
        elif "reasoning_content" in raw:
            step["reasoning_content"] = None
        if primary.tool_calls:
            step["tool_calls"], arguments = _write_calls(
                primary.tool_calls, _dict(stash.get("tool_calls"))
            )
            if arguments:
                ours["arguments"] = arguments
        elif "tool_calls" in raw:
            step["tool_calls"] = raw["tool_calls"]
        if "metrics" in primary.extra and (
            primary.extra["metrics"] is None or _metrics_ok(primary.extra["metrics"])
        ):
            step["metrics"] = primary.extra["metrics"]
            consumed.add("metrics")

    observation = stash.get("observation", _ABSENT)
    if written_results or isinstance(observation, dict):
        step["observation"] = _ordered(
            {"results": written_results, **_dict(observation)},
            _OBSERVATION_ORDER,
            stash.get("observation_order"),
        )
    elif observation is None:
        step["observation"] = None

    left = _leftovers(primary, native, consumed)
    if left:
        ours = {"message": left, **ours}
    base_extra = keys.pop("extra", _ABSENT)
    step.update(keys)
    if ours:
        step["extra"] = {**_dict(base_extra), BASHGYM: ours}
    elif base_extra is not _ABSENT:
        step["extra"] = base_extra
    return _ordered(step, _STEP_ORDER, stash.get("order"))


def _write_calls(
    calls: list[ToolCall],
    stash: dict[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    out, raw_arguments = [], {}
    for j, call in enumerate(calls):
        arguments, exact = _args_for_atif(call.arguments)
        if not exact:
            raw_arguments[str(j)] = call.arguments
        residual = _dict(stash.get(str(j)))
        written = {
            "tool_call_id": call.id,
            "function_name": call.name,
            "arguments": arguments,
            **_dict(residual.get("keys")),
        }
        out.append(_ordered(written, _CALL_ORDER, residual.get("order")))
    return out, raw_arguments


def _write_result(message: Message, own_ids: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One observation result. ATIF wants `source_call_id` to name a tool call of the same step
    (strict validators check it), so an id that doesn't goes to extra.bashgym instead, unless
    the document this came from had it there."""
    stash = _stash_of(message.extra)
    raw = _dict(stash.get("raw"))
    call_id = message.tool_call_id
    native = call_id is None or call_id in own_ids or raw.get("source_call_id") == call_id
    result: dict[str, Any] = {}
    if call_id is not None and call_id == stash.get("paired") and call_id in own_ids:
        if "source_call_id" in raw:  # paired by position, as read: the document's null
            result["source_call_id"] = raw["source_call_id"]
    elif call_id is not None and native:
        result["source_call_id"] = call_id
    elif call_id is None and "source_call_id" in raw and raw["source_call_id"] is None:
        result["source_call_id"] = None
    if "content" in raw and _text_of(raw["content"]) == message.content:
        result["content"] = raw["content"]
    elif not ("content" in (stash.get("absent") or []) and message.content == ""):
        result["content"] = message.content
    result.update(_dict(stash.get("keys")))
    consumed = {STASH} if isinstance(message.extra.get(STASH), dict) else set()
    left = _leftovers(message, {"tool_call_id"} if native else set(), consumed)
    return _ordered(result, _RESULT_ORDER, stash.get("order")), left
