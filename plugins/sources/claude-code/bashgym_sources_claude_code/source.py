"""Find Claude Code session files, parse each into a Trace with its subagents, filter, stream.

Why it is shaped this way: a user's `~/.claude/projects` grows to gigabytes, so the source is a
generator over files (one session and its subagents in memory at a time, never the corpus), and
cheap filters run before a file is opened: the project filter on the directory name (the slug is
the cwd with every non-alphanumeric character replaced by `-`, so a slugified pattern that misses
the slug cannot match the cwd) and `since` on the file's mtime (a file last written before
`since` cannot hold a session that started after it). The exact checks run on the parsed trace.

Layout (shared/reference/claude-code.md): `<projects>/<slug>/<session>.jsonl`, subagents in
`<slug>/<session>/subagents/agent-<id>.jsonl` with `agent-<id>.meta.json` (agentType,
description, toolUseId, spawnDepth), and the agents of a Workflow run in
`<slug>/<session>/subagents/workflows/<runId>/agent-<id>.jsonl`. Claude Code 2.0.x wrote
subagents as `<slug>/agent-<id>.jsonl` beside the sessions; those are attached by their
`sessionId`; 1.x wrote them into the session file itself (transcript.py splits them out). A
subagent is never a top-level trace: it sits in its parent's `subagents`, nested under the
subagent whose tool call spawned it when that is known, with `provenance.parent_session_id`,
its agent type and description and the spawning call (`tool_use_id`) in `provenance.extra`.
The spawning call is the meta file's `toolUseId`, else the call whose result named the agent
(`toolUseResult.agentId`) or the workflow run (`runId`), else the Task/Agent call whose prompt
is the subagent's first message. `<session>/tool-results/` (large tool outputs kept aside) is
not a transcript and is skipped.

A file that is not a transcript at all (a CSV, another tool's JSON) is one clear error when it
was named on its own (exit 2), and one counted, noted file in a folder, never an error per line.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from bashgym.contracts import InputError, Options, RunContext, Source
from bashgym.records import Trace
from bashgym_sources_claude_code.parallel import Counts, Recorder, Workers, auto_workers, replay
from bashgym_sources_claude_code.transcript import looks_like_transcript, parse_file

MAX_NOTES = 50
"""Bad lines written to run.json notes, each as `file:line: reason`; the rest are counted, with
one closing note saying how many were left out. (Not logged as well: a log line would print the
raw path on stderr, where a note is redacted.)"""

ATTACHMENT_TYPES = frozenset(
    {
        "agent_listing_delta", "agent_mention", "already_read_file", "async_hook_response",
        "background_shell_status", "budget_usd", "command_permissions", "compact_file_reference",
        "critical_system_reminder", "date_change", "deferred_tools_delta", "diagnostics",
        "directory", "edited_image_file", "edited_text_file", "file", "hook_additional_context",
        "hook_blocking_error", "hook_cancelled", "hook_error_during_execution",
        "hook_non_blocking_error", "hook_permission_decision", "hook_stopped_continuation",
        "hook_success", "hook_system_message", "invoked_skills", "mcp_instructions_delta",
        "mcp_resource", "memory", "nested_memory", "new_directory", "new_file",
        "opened_file_in_ide", "output_style", "output_token_usage", "pdf_reference",
        "plan_file_reference", "plan_mode", "plan_mode_exit", "plan_mode_reentry",
        "queued_command", "relevant_memories", "selected_lines_in_ide", "skill_listing",
        "structured_output", "task_progress", "task_reminder", "task_status", "team_context",
        "teammate_mailbox", "todo", "todo_reminder", "token_usage", "ultramemory", "unknown",
    }
)  # fmt: skip
"""Attachment types of Claude Code 1.x-2.x transcripts, each counted under its own name
(`source.attachments.<type>`; `unknown`: one without a type). Any other type counts as
`source.attachments.other`: the type is the transcript's to choose (a token, a new name per
file), and a count name becomes a key of run.json and a row of the hf-hub card."""


NOT_A_DATE = "not a date or time: use YYYY-MM-DD or an ISO datetime, e.g. 2026-11-28T09:00"
"""since/until's error; the kernel adds the value given (`(got 'yesterday')`)."""
_WHEN: TypeAdapter[date | datetime] = TypeAdapter(date | datetime)


class ClaudeCodeOptions(Options):
    path: str | None = Field(
        default=None,
        description="A projects dir, one project dir or one .jsonl session file; default: "
        "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.",
    )
    project: str | None = Field(
        default=None,
        description="Keep projects whose cwd or dir name contains this text, or matches it as a "
        "glob when it has * ? or [.",
    )
    since: date | datetime | None = Field(
        default=None, description="Keep sessions started at or after this date/time (UTC)."
    )
    until: date | datetime | None = Field(
        default=None,
        description="Keep sessions started before this time, or on or before this date (UTC).",
    )
    min_turns: int | None = Field(
        default=None, ge=0, description="Keep sessions with at least this many assistant turns."
    )
    max_turns: int | None = Field(
        default=None, ge=0, description="Keep sessions with at most this many assistant turns."
    )
    success_only: bool = Field(
        default=False,
        description="Keep sessions whose last message is an assistant reply that is not an API "
        "error (see Outcome.error_kind for why others failed).",
    )
    subagents: bool = Field(default=True, description="Attach subagent transcripts to parents.")
    limit: int | None = Field(default=None, ge=1, description="Stop after this many sessions.")
    workers: int | None = Field(
        default=None,
        ge=1,
        description="Processes that parse sessions (1: the run's own); default: for a corpus "
        "of 64 MB or more, one per CPU beside the run's own process (at most 2), else 1.",
    )

    @field_validator("path")
    @classmethod
    def _exists(cls, value: str | None) -> str | None:
        """A path given that is not there is refused when the run is resolved, before a run
        folder exists, so a typo leaves nothing behind (open() checks again: a file may vanish
        in between). The default folder is not validated here (pydantic skips defaults): its
        absence stays open()'s error, which names where the default came from."""
        if value and not Path(value).expanduser().exists():
            raise PydanticCustomError("path_missing", "does not exist")
        return value

    @field_validator("since", "until", mode="before")
    @classmethod
    def _date_or_time(cls, value: Any) -> Any:
        """`2026-03-03` is a day (until: inclusive); anything longer is an instant, even at
        midnight (pydantic alone would read `2026-03-03T00:00:00Z` as the day). What neither
        reads is one message with the formats to use: pydantic's own said it twice, once per
        type of the union, and never showed a format."""
        if isinstance(value, str):
            text = value.strip()
            try:
                return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
            except ValueError:
                pass
        if value is None or isinstance(value, date):  # (a datetime is a date)
            return value
        try:
            return _WHEN.validate_python(value)  # what pydantic accepts, e.g. a Unix time
        except ValidationError:
            raise PydanticCustomError("date_format", NOT_A_DATE) from None

    @model_validator(mode="after")
    def _ranges(self) -> ClaudeCodeOptions:
        low, high = self.min_turns, self.max_turns
        if low is not None and high is not None and low > high:
            raise ValueError("min_turns is greater than max_turns")
        return self


class ClaudeCodeInputError(InputError):
    """The transcripts path does not exist or holds no session files."""


def default_projects_dir() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


def slugify(text: str) -> str:
    """Claude Code's project dir name for a cwd: every non-alphanumeric character becomes `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", text)


def _slug_pattern(pattern: str) -> str:
    """`slugify` for a filter pattern; glob characters stay (`*/notes.*` prunes as `*-notes-*`)."""
    return re.sub(r"[^A-Za-z0-9*?\[\]!]", "-", pattern)


def _utc(value: date | datetime, end_of_day: bool = False) -> datetime:
    if not isinstance(value, datetime):
        value = datetime.combine(value + timedelta(days=1) if end_of_day else value, time())
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class _Filters:
    """The options' filters as fast checks, before opening a file and on the parsed trace."""

    def __init__(self, options: ClaudeCodeOptions) -> None:
        self.options = options
        pattern = options.project
        self.glob = pattern is not None and any(ch in pattern for ch in "*?[")
        self.since = _utc(options.since) if options.since is not None else None
        self.until = _utc(options.until, end_of_day=True) if options.until is not None else None
        self.since_ts = self.since.timestamp() if self.since is not None else None

    def _match(self, pattern: str, text: str) -> bool:
        return fnmatch.fnmatchcase(text, pattern) if self.glob else pattern in text

    def project_dir_may_match(self, slug: str) -> bool:
        pattern = self.options.project
        if pattern is None:
            return True
        return self._match(pattern, slug) or self._match(_slug_pattern(pattern), slug)

    def file_may_match(self, path: Path) -> bool:
        if self.since_ts is None:
            return True
        try:
            return path.stat().st_mtime >= self.since_ts
        except OSError:
            return True  # let the parser report it

    def why_not(self, trace: Trace, slug: str) -> str | None:
        """The filter a trace fails, or None if it is kept."""
        options = self.options
        if options.project is not None:
            cwd = trace.provenance.cwd
            if not (self._match(options.project, cwd or "") or self._match(options.project, slug)):
                return "project"
        started = trace.timing.started_at
        if self.since is not None and (started is None or _aware(started) < self.since):
            return "since"
        if self.until is not None and (started is None or _aware(started) >= self.until):
            return "until"
        turns = trace.outcome.num_turns or 0
        if options.min_turns is not None and turns < options.min_turns:
            return "min_turns"
        if options.max_turns is not None and turns > options.max_turns:
            return "max_turns"
        if options.success_only and trace.outcome.success is not True:
            return "success_only"
        return None


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class BadLines:
    """Counts every unusable line in the run and notes the first MAX_NOTES by file and line."""

    def __init__(self, run: Any, max_notes: int = MAX_NOTES) -> None:
        self.run, self.max_notes, self.count, self.left_out = run, max_notes, 0, 0

    def __call__(self, file: str, line: int, reason: str) -> None:
        self.count += 1
        self.run.count("source.bad_lines")
        if self.count <= self.max_notes:
            self.run.note(f"claude-code: {file}:{line}: {reason}")
        else:
            self.left_out += 1

    def close(self) -> None:
        if self.left_out:
            self.run.note(
                f"claude-code: {self.left_out} more bad lines not listed "
                f"({self.count} in all, counted as source.bad_lines)"
            )
            self.left_out = 0


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _session_of(path: Path) -> str | None:
    """The sessionId of a legacy `agent-*.jsonl` beside the sessions (from its first lines)."""
    try:
        with open(path, "rb") as handle:
            for _, raw in zip(range(20), handle, strict=False):
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    return obj["sessionId"]
    except OSError:
        return None
    return None


class ClaudeCodeSource(Source[ClaudeCodeOptions]):
    """Claude Code session transcripts (~/.claude/projects) as Traces, subagents attached."""

    output_format = "traces"

    def open(self, options: ClaudeCodeOptions, run: RunContext) -> Iterator[Trace]:
        root = Path(options.path).expanduser() if options.path else default_projects_dir()
        if not root.exists():
            raise ClaudeCodeInputError(f"claude-code source: {str(root)!r} does not exist")
        if root.is_dir() and (root / "projects").is_dir() and not _session_files(root):
            root = root / "projects"  # given ~/.claude itself
        if root.is_file() and not looks_like_transcript(root):
            raise ClaudeCodeInputError(
                f"claude-code source: {str(root)!r} is not a Claude Code transcript (JSONL "
                "lines of type user, assistant, ...)"
            )
        return self._traces(root, options, run)

    def _traces(self, root: Path, options: ClaudeCodeOptions, run: RunContext) -> Iterator[Trace]:
        """Each kept session's Trace, in file order (parsed here, or by workers)."""
        counts = Counts(run)  # what is counted reaches the run in sums (see Counts)
        sessions = self._sessions(root, options, counts)
        try:
            for trace in sessions:
                counts.flush(due=True)
                yield trace
        finally:
            sessions.close()  # its workers stopped and bad lines noted, then the last sums
            counts.flush()

    def _sessions(self, root: Path, options: ClaudeCodeOptions, run: Counts) -> Iterator[Trace]:
        filters = _Filters(options)
        bad = BadLines(run)
        # worker processes (0: this process parses)
        n = 0 if root.is_file() or options.workers == 1 else options.workers or auto_workers(root)
        workers = Workers(n, options, run, bad) if n else None
        kept = 0
        try:
            for slug, folder, files in self._project_dirs(root, filters, run):
                # legacy subagent files are never top-level traces, attached or not
                legacy = {} if root.is_file() else self._legacy_subagents(folder, files)
                for path in files:
                    skip = Recorder()  # with workers, what it counts waits its turn
                    if not filters.file_may_match(path):
                        skip.count("source.filtered.since")
                    elif not looks_like_transcript(path):
                        skip.count("source.not_transcripts")
                        skip.note(f"claude-code: {path}: not a Claude Code transcript, skipped")
                    if skip.calls:
                        legacy.pop(path.stem, None)  # a session's id is its file name
                        if workers is not None:
                            workers.skipped(skip)
                        else:
                            replay(skip.calls, run, bad)
                        continue
                    if workers is not None and not legacy:
                        done = workers.submit(path, slug)
                    else:  # (a folder of Claude Code 2.0.x, whose subagents lie beside it)
                        done = self._here(path, slug, legacy, filters, options, run, bad, workers)
                    for item in done:
                        yield item
                        kept += 1
                        if options.limit is not None and kept >= options.limit:
                            return
                if options.subagents:  # each by file: run.json names them
                    for orphan in (p for paths in legacy.values() for p in paths):
                        run.drop("claude-code: subagent without its session", row_id=str(orphan))
            for item in workers.drain() if workers is not None else ():
                yield item
                kept += 1
                if options.limit is not None and kept >= options.limit:
                    return
        finally:
            if workers is not None:
                workers.close()
            bad.close()

    @staticmethod
    def _here(
        path: Path,
        slug: str,
        legacy: dict[str, list[Path]],
        filters: _Filters,
        options: ClaudeCodeOptions,
        run: Counts,
        bad: BadLines,
        workers: Workers | None,
    ) -> Iterator[Trace]:
        """One session parsed in this process (after those in flight, to keep the order)."""
        if workers is not None:
            yield from workers.drain()
        trace = parse_session(path, slug, legacy, filters, options, run, bad)
        if trace is not None:
            yield trace

    def _project_dirs(
        self, root: Path, filters: _Filters, run: Counts
    ) -> Iterator[tuple[str, Path, list[Path]]]:
        """(slug, folder, session files) per project dir, sorted, pruned by the project filter."""
        if root.is_file():
            yield root.parent.name, root.parent, [root]
            return
        direct = _session_files(root, include_agents=True)
        if direct:
            yield root.name, root, direct
            return
        found = False
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            files = _session_files(folder, include_agents=True)
            if not files:
                continue
            found = True
            if filters.project_dir_may_match(folder.name):
                yield folder.name, folder, files
            else:
                sessions = sum(not p.name.startswith("agent-") for p in files)
                run.count("source.filtered.project", sessions)
        if not found:
            raise ClaudeCodeInputError(
                f"claude-code source: no session files (*.jsonl) in {str(root)!r} or its "
                "project folders"
            )

    def _legacy_subagents(self, folder: Path, files: list[Path]) -> dict[str, list[Path]]:
        """Remove `agent-*.jsonl` from `files` and group them by the session they belong to."""
        agents = [p for p in files if p.name.startswith("agent-")]
        if not agents:
            return {}
        files[:] = [p for p in files if not p.name.startswith("agent-")]
        grouped: dict[str, list[Path]] = {}
        for path in agents:
            grouped.setdefault(_session_of(path) or "", []).append(path)
        return grouped


def parse_session(
    path: Path,
    slug: str,
    legacy: dict[str, list[Path]],
    filters: _Filters,
    options: ClaudeCodeOptions,
    run: Any,
    bad: Any,
) -> Trace | None:
    """One session file as its Trace, subagents attached (those beside it in `legacy`, by its
    session id, taken out), or None when it is empty or a filter leaves it out; counted on
    `run` (a RunContext, or a worker's recorder: `parallel.py`)."""
    trace = parse_file(path, bad)
    run.count("source.files")
    if trace is None:
        run.count("source.empty_sessions")
        return None
    mine = legacy.pop(trace.provenance.session_id or path.stem, [])
    reason = filters.why_not(trace, slug)
    if reason is not None:
        run.count(f"source.filtered.{reason}")
        return None
    if options.subagents:
        _attach(trace, path, mine, bad)
    _count_left_out(trace, run)
    run.count("source.traces")
    run.count("source.subagents", _count_subagents(trace))
    return trace


def _attach(trace: Trace, path: Path, legacy: list[Path], bad: Any) -> None:
    folder = path.with_suffix("") / "subagents"
    agent_files = sorted(folder.rglob("agent-*.jsonl")) if folder.is_dir() else []
    spawned_agents = trace.extra.get("spawned_agents") or {}
    spawned_runs = trace.extra.get("spawned_runs") or {}
    children: list[Trace] = []
    for agent_path in [*agent_files, *legacy]:
        child = parse_file(agent_path, bad)
        if child is None:
            continue
        meta = _read_meta(agent_path.with_name(agent_path.stem + ".meta.json"))
        prov = child.provenance
        prov.parent_session_id = trace.provenance.session_id
        agent_id = prov.extra.get("agent_id") or agent_path.stem.removeprefix("agent-")
        prov.extra["agent_id"] = agent_id
        for key, name in (
            ("agentType", "agent_type"),
            ("description", "description"),
            ("toolUseId", "tool_use_id"),
            ("spawnDepth", "spawn_depth"),
        ):
            if key in meta:
                prov.extra[name] = meta[key]
        run_dir = agent_path.parent
        if run_dir.parent.name == "workflows" and run_dir.parent.parent == folder:
            prov.extra["workflow_run"] = run_dir.name
            if "tool_use_id" not in prov.extra and run_dir.name in spawned_runs:
                prov.extra["tool_use_id"] = spawned_runs[run_dir.name]
        if "tool_use_id" not in prov.extra and agent_id in spawned_agents:
            prov.extra["tool_use_id"] = spawned_agents[agent_id]
        if "tool_use_id" not in prov.extra:
            spawned_by = _spawning_call(trace, child)
            if spawned_by is not None:
                prov.extra["tool_use_id"] = spawned_by
        children.append(child)
    if not children:
        return
    # Nest a subagent under the subagent whose tool call spawned it, when that is known.
    owner_of_call: dict[str, Trace] = {}
    for owner in children:
        for message in owner.messages:
            for call in message.tool_calls:
                owner_of_call[call.id] = owner
    for child in children:
        owner = owner_of_call.get(child.provenance.extra.get("tool_use_id") or "")
        (owner.subagents if owner is not None and owner is not child else trace.subagents).append(
            child
        )


def _count_left_out(trace: Trace, run: Any) -> None:
    """What the trace's files held that is not among its messages, counted by reason and kind
    (transcript.py records it per file in `extra.left_out`), and attachments by kind."""
    _count_tokens(trace, run)
    for reason, counts in (trace.extra.get("left_out") or {}).items():
        for kind, n in counts.items():
            run.count(f"source.left_out.{reason}.{kind}", n)
    for kind, n in (trace.extra.get("attachments") or {}).items():
        if kind in ATTACHMENT_TYPES:
            run.count(f"source.attachments.{kind}", n)
            continue
        run.count("source.attachments.other", n)
        run.note_once(
            kind,
            f"claude-code: {trace.provenance.source_file}: attachment type {kind[:80]!r} is not "
            "known: counted as source.attachments.other",
        )
    for sub in trace.subagents:  # each subagent once, at any depth
        _count_left_out(sub, run)


def _count_tokens(trace: Trace, run: Any) -> None:
    """The trace's own tokens in run.json (`source.tokens.*`): a session whose rows a sink
    drops later (no dialogue, a usage-only file) still says what it spent."""
    for kind in ("input", "output", "cache_creation", "cache_read"):
        if n := getattr(trace.usage, f"{kind}_tokens"):
            run.count(f"source.tokens.{kind}", n)


def _spawning_call(parent: Trace, child: Trace) -> str | None:
    """Without a meta file: the parent's Agent/Task call whose prompt is the child's first
    user message."""
    first = next((m.content for m in child.messages if m.role == "user"), None)
    if not first:
        return None
    for message in parent.messages:
        for call in message.tool_calls:
            if call.name in ("Agent", "Task") and call.arguments_dict().get("prompt") == first:
                return call.id
    return None


def _session_files(folder: Path, include_agents: bool = False) -> list[Path]:
    try:
        return sorted(
            p
            for p in folder.glob("*.jsonl")
            if (include_agents or not p.name.startswith("agent-")) and p.is_file()
        )
    except OSError:
        return []


def _count_subagents(trace: Trace) -> int:
    return sum(1 + _count_subagents(child) for child in trace.subagents)
