"""The `codex` source: find rollout files and stream one Trace per file.

Why a generator: a `~/.codex/sessions` tree grows by a file per session for as long as Codex is
used, so traces are yielded one at a time rather than built up front. The file list itself is
resolved eagerly, so a wrong path fails before any work with one clear line, and so does a
named file that is not a rollout at all (a CSV): one error, not one per line.

A subagent's rollout (its session_meta names a parent thread) is read with its parent and
nested in the parent's `subagents`, under the call whose output names the subagent's thread
when there is one; only the first line of each file is read to find them. A subagent whose
parent is not among the inputs is yielded on its own, `provenance.parent_session_id` set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson
from bashgym_inputs import find_files, require_input
from pydantic import Field, field_validator

from bashgym.contracts import InputError, Options, RunContext, Source
from bashgym.records import Trace
from bashgym_sources_codex.rollout import LINE_TYPES, SKIPPED_TYPES, read_rollout


class CodexOptions(Options):
    path: str | None = Field(
        default=None,
        description=(
            "A rollout .jsonl file, a folder (searched recursively for rollout-*.jsonl, else "
            "*.jsonl) or a glob; default: $CODEX_HOME/sessions, else ~/.codex/sessions."
        ),
    )
    include_reasoning: bool = Field(
        default=True, description="Keep reasoning summaries on assistant messages."
    )
    skip_empty: bool = Field(
        default=True,
        description="Drop rollouts with no user or assistant message (counted as dropped).",
    )

    @field_validator("path")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name a file, folder or glob (or be left out)")
        if value is not None:
            require_input(value)
        return value


class CodexInputError(InputError):
    """No rollout files where the user pointed."""


def default_sessions_dir() -> Path:
    """Where Codex keeps its sessions: `$CODEX_HOME/sessions`, `~/.codex/sessions` by default."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"


def find_rollouts(path: str | None) -> list[Path]:
    """The rollout files `path` names, sorted (by date, for Codex's own folder layout)."""
    target = Path(path).expanduser() if path else default_sessions_dir()
    where = str(target) if path else f"{target} (the default; set source.path or CODEX_HOME)"
    # Codex names its files rollout-*.jsonl; any other .jsonl counts only when there are none.
    found = find_files(str(target), pattern="rollout-*.jsonl") or find_files(
        str(target), pattern="*.jsonl"
    )
    if not found:
        raise CodexInputError(f"codex source: no rollout files in {where}")
    if len(found) == 1 and target.is_file() and not looks_like_rollout(found[0]):
        raise CodexInputError(f"codex source: {str(target)!r} is not a Codex rollout (JSONL)")
    return found


ITEM_TYPES = {"message", "reasoning", "function_call", "function_call_output", "local_shell_call"}


def looks_like_rollout(path: Path, lines: int = 20) -> bool:
    """Whether one of the first non-blank lines is a rollout line (`{type, payload}`, or the
    legacy bare session meta / response item); an empty file counts."""
    seen = 0
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                seen += 1
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    obj = None
                if isinstance(obj, dict) and (
                    (obj.get("type") in LINE_TYPES and "payload" in obj)
                    or obj.get("type") in ITEM_TYPES
                    or "record_type" in obj
                    or ("id" in obj and "timestamp" in obj)
                ):
                    return True
                if seen >= lines:
                    return False
    except OSError:
        return True  # reading it will report why
    return seen == 0


def _first_meta(path: Path) -> tuple[str | None, str | None]:
    """(session id, parent thread id) from a rollout's first line, without reading the rest."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline()
        line = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return None, None
    payload = line.get("payload") if isinstance(line, dict) else None
    if not isinstance(payload, dict) or line.get("type") != "session_meta":
        return None, None
    source = payload.get("source")
    spawn = {}
    if isinstance(source, dict) and isinstance(source.get("subagent"), dict):
        spawn = source["subagent"].get("thread_spawn") or {}
    parent = payload.get("parent_thread_id") or (spawn or {}).get("parent_thread_id")
    own = payload.get("id") or payload.get("session_id")
    return (str(own) if own else None), (str(parent) if parent else None)


class CodexSource(Source[CodexOptions]):
    """Codex CLI rollout JSONL sessions, one normalized Trace per rollout file."""

    output_format = "traces"

    def open(self, options: CodexOptions, run: RunContext) -> Iterator[Trace]:
        return self._traces(find_rollouts(options.path), options, run)

    def _traces(self, paths: list[Path], options: CodexOptions, run: RunContext) -> Iterator[Trace]:
        ids = {path: _first_meta(path) for path in paths}
        present = {own for own, _ in ids.values() if own}
        children: dict[str, list[Path]] = {}
        for path, (_, parent) in ids.items():
            if parent in present:
                children.setdefault(parent, []).append(path)
        nested = {p for kids in children.values() for p in kids}
        noted: set[str] = set()  # unknown item types noted so far (once a run each)
        for path in paths:
            if path in nested:
                continue  # read with its parent
            trace = self._read(path, options, run, noted)
            if trace is None:
                continue
            self._attach(trace, children, options, run, {path}, noted)
            if trace.provenance.parent_session_id:
                run.count("source.subagents_without_parent")
            yield trace

    @staticmethod
    def _count_skipped(
        path: Path, skipped: dict[str, int], run: RunContext, noted: set[str]
    ) -> None:
        """Skipped response items by type. Only Codex's own types get a count name of their
        own: a rollout's item type can be anything (a token, which the event bus would leave
        as a `[REDACTED:...]` count of its own in run.json and the hf-hub card, or a new name
        per file). Any other type counts as `other` and is noted once a run."""
        for kind, n in sorted(skipped.items()):
            if kind in SKIPPED_TYPES:
                run.count(f"source.skipped_items.{kind}", n)
                continue
            run.count("source.skipped_items.other", n)
            if kind not in noted:
                noted.add(kind)
                run.note(
                    f"codex: {path}: response item type {kind[:80]!r} is not known: "
                    "skipped, counted as source.skipped_items.other"
                )

    def _read(
        self, path: Path, options: CodexOptions, run: RunContext, noted: set[str]
    ) -> Trace | None:
        if not looks_like_rollout(path):
            run.count("source.not_rollouts")
            run.note(f"{path}: not a Codex rollout, skipped")
            return None
        try:
            rollout = read_rollout(path, options.include_reasoning)
        except OSError as exc:
            run.count("source.bad_files")
            run.note(f"{path}: cannot read: {exc}")
            return None
        run.count("source.files")
        if rollout.bad_lines:
            run.count("source.bad_lines", len(rollout.bad_lines))
            for line in rollout.bad_lines:
                run.note(line)
        for kind in ("input", "output", "cache_creation", "cache_read"):  # the file's own
            if n := getattr(rollout.trace.usage, f"{kind}_tokens"):  # tokens, kept or not
                run.count(f"source.tokens.{kind}", n)
        self._count_skipped(path, rollout.skipped, run, noted)
        for reason, counts in (rollout.trace.extra.get("left_out") or {}).items():
            for kind, n in counts.items():
                run.count(f"source.left_out.{reason}.{kind}", n)
        if options.skip_empty and not rollout.has_dialogue:
            run.drop("codex: rollout has no user or assistant message", row_id=str(path))
            return None
        return rollout.trace

    def _attach(
        self,
        trace: Trace,
        children: dict[str, list[Path]],
        options: CodexOptions,
        run: RunContext,
        seen: set[Path],
        noted: set[str],
    ) -> None:
        """Nest the subagent rollouts of `trace` (and theirs), each under the call whose
        output names the subagent's thread, when one does."""
        for path in children.get(trace.provenance.session_id or "", []):
            if path in seen:
                continue
            seen.add(path)
            child = self._read(path, options, run, noted)
            if child is None:
                continue
            thread = child.provenance.session_id or ""
            for message in trace.messages:
                if message.role == "tool" and thread and thread in message.content:
                    child.provenance.extra["tool_use_id"] = message.tool_call_id
                    break
            run.count("source.subagents")
            self._attach(child, children, options, run, seen, noted)
            trace.subagents.append(child)
