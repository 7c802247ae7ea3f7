"""Corpus check: every transcript fixture through its source, raw counts vs ingested counts.

Why: a source that reads most of a file looks right on a glance at its output; what it loses
shows only when someone counts. So, per file, an independent raw counter (written here from
the formats' own rules, sharing no code with the sources) counts the messages, tool calls and
tool results the file holds, and the source's traces are counted the same way, subagents
included, grouped by the file each trace came from. The difference must be exactly what the
source says it left out (`trace.extra["left_out"]`, by reason) plus what the ATIF source folds
into the system prompt; any other difference fails (exit 1).

Run: `uv run python bench/transcript_corpus.py` (no network, no model; a few seconds).
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from bashgym.contracts import RunContext
from bashgym.records import Trace
from bashgym.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("user", "assistant", "system", "tool_calls", "tool_results")


# --- independent raw counters ------------------------------------------------------------------


def raw_claude_code(path: Path) -> Counter[str]:
    """User prompts (text lines, isMeta included, queued prompts), assistant responses (by
    message.id), tool_use and tool_result blocks."""
    out: Counter[str] = Counter()
    responses: set[str] = set()
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict):
            continue
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if line.get("type") == "assistant":
            key = message.get("id") or line.get("uuid")
            if key not in responses:
                responses.add(key)
                out["assistant"] += 1
            out["tool_calls"] += sum(b.get("type") == "tool_use" for b in blocks)
        elif line.get("type") == "user":
            results = sum(b.get("type") == "tool_result" for b in blocks)
            out["tool_results"] += results
            if isinstance(content, str) or len(blocks) > results:
                out["user"] += 1
        elif line.get("type") == "attachment":
            attachment = line.get("attachment") or {}
            out["user"] += attachment.get("type") == "queued_command"
    return out


def raw_codex(path: Path) -> Counter[str]:
    """Response-item messages by role, call and output items, and event-only dialogue: an
    event message whose text no response-item message of the file carries. A model response
    that is only tool calls (or only reasoning) is an assistant turn too: calls not right after
    an assistant message, and reasoning no message or call follows, count one each. Legacy
    rollouts write items bare, without the {type, payload} wrapper."""
    out: Counter[str] = Counter()
    texts: set[str] = set()
    events: list[tuple[str, str]] = []
    open_turn = False  # an assistant response is open: further calls belong to it
    dangling = False  # reasoning waiting for its answer
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict):
            continue
        wrapped = "payload" in line and line.get("type") in (
            "session_meta", "turn_context", "response_item", "event_msg", "compacted"
        )  # fmt: skip
        payload = line["payload"] if wrapped else line
        if not isinstance(payload, dict) or (not wrapped and "record_type" in line):
            continue
        kind = payload.get("type")
        item = line.get("type") == "response_item" if wrapped else isinstance(kind, str)
        if item and kind == "message":
            role = payload.get("role")
            dangling = False
            if role == "assistant":
                out["assistant"] += 1
            else:
                out["user" if role == "user" else "system"] += 1
            open_turn = role == "assistant"
            for part in payload.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.add(part["text"])
        elif item and kind == "reasoning":
            open_turn, dangling = False, True
        elif item and kind in ("function_call", "custom_tool_call", "local_shell_call"):
            out["tool_calls"] += 1
            if not open_turn:
                out["assistant"] += 1
            open_turn, dangling = True, False
        elif item and kind in ("function_call_output", "custom_tool_call_output"):
            out["tool_results"] += 1
            open_turn = False
        elif wrapped and line["type"] == "event_msg" and kind in ("user_message", "agent_message"):
            events.append(("user" if kind == "user_message" else "assistant", payload["message"]))
    out["assistant"] += dangling
    for role, text in events:
        out[role] += text not in texts
    return out


def raw_atif(path: Path) -> Counter[str]:
    """Steps by source, tool calls, observation results."""
    out: Counter[str] = Counter()
    doc = json.loads(path.read_text(encoding="utf-8"))
    for step in doc.get("steps", []):
        role = {"agent": "assistant"}.get(step["source"], step["source"])
        out[role] += 1
        out["tool_calls"] += len(step.get("tool_calls") or [])
        out["tool_results"] += len((step.get("observation") or {}).get("results") or [])
    return out


# --- what the sources made of them --------------------------------------------------------------


def ingested(traces: list[Trace]) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Per source file: counts of the traces' messages, and what the traces say they left out."""
    got: dict[str, Counter[str]] = defaultdict(Counter)
    left: dict[str, Counter[str]] = defaultdict(Counter)
    todo = list(traces)
    while todo:
        trace = todo.pop()
        todo += trace.subagents
        counts = got[str(trace.provenance.source_file)]
        if trace.system_prompt is not None and trace.provenance.source == "atif":
            counts["system"] += 1  # ATIF's first system step is the system prompt
        for message in trace.messages:
            counts[message.role if message.role != "tool" else "tool_results"] += 1
            counts["tool_calls"] += len(message.tool_calls)
        for reason, kinds in (trace.extra.get("left_out") or {}).items():
            for kind, n in kinds.items():
                if reason != "mid_conversation_system":  # still among the messages
                    left[str(trace.provenance.source_file)][kind] += n
    return got, left


def read_all() -> list[tuple[str, Path, list[Trace]]]:
    from bashgym_formats_atif.source import AtifOptions, AtifSource
    from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource
    from bashgym_sources_codex.source import CodexOptions, CodexSource

    run = RunContext(run_dir=Path("/tmp"), settings=Settings())
    cc = ROOT / "plugins/sources/claude-code/tests/fixtures"
    codex = ROOT / "plugins/sources/codex/tests/fixtures"
    atif = ROOT / "plugins/formats/atif/tests/fixtures"
    out = []
    cc_inputs = [cc / "projects", *sorted((cc / "shapes").iterdir())]
    cc_inputs += sorted(cc.glob("*.jsonl"))
    for where in cc_inputs:
        traces = list(ClaudeCodeSource().open(ClaudeCodeOptions(path=str(where)), run))
        out.append(("claude-code", where, traces))
    for where in (codex / "sessions", codex / "shapes"):
        traces = list(CodexSource().open(CodexOptions(path=str(where), skip_empty=False), run))
        out.append(("codex", where, traces))
    traces = list(AtifSource().open(AtifOptions(path=str(atif)), run))
    out.append(("atif", atif, traces))
    return out


def main() -> int:
    counters = {"claude-code": raw_claude_code, "codex": raw_codex, "atif": raw_atif}
    failures = 0
    header = f"{'source':<12} {'file':<58} " + " ".join(f"{k:>13}" for k in KINDS) + "  verdict"
    print(header)
    print("-" * len(header))
    for source, where, traces in read_all():
        got, left = ingested(traces)
        files = sorted(p for p in (where.rglob("*") if where.is_dir() else [where]) if p.is_file())
        files = [p for p in files if p.suffix in (".jsonl", ".json") and "meta" not in p.name]
        files = [p for p in files if p.name not in ("journal.jsonl", "manifest.json")]
        for path in files:
            raw = counters[source](path)
            have, explained = got.get(str(path), Counter()), left.get(str(path), Counter())
            cells, ok = [], True
            for kind in KINDS:
                expected = raw[kind] - explained[kind]
                ok &= have[kind] == expected
                note = f"-{explained[kind]}" if explained[kind] else ""
                cells.append(f"{raw[kind]}{note}->{have[kind]}".rjust(13))
            failures += not ok
            name = str(path.relative_to(ROOT))[-58:]
            print(f"{source:<12} {name:<58} " + " ".join(cells) + ("  ok" if ok else "  DIFF"))
    print(
        "\nraw-left_out->ingested per kind; left_out is what a source says it did not put in "
        "messages, by reason (rewind, replay, meta, merged, into_system_prompt)."
    )
    print("FAIL: unexplained differences" if failures else "OK: every difference is explained")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
