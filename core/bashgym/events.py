"""A run's typed events, the log they are appended to, and the tally every count comes from.

`run.emit(event)` is the one path for every count, drop, token and task: the bus appends it to
`events.jsonl` (its text redacted), then hands it to the Tally (what run.json and the terminal
say), run.json's writer and `on_event`. Nothing else keeps a count, so they cannot disagree."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from bashgym.records import Usage


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str
    at: float = Field(default_factory=time.time)


class RunStarted(Event):
    type: Literal["run_started"] = "run_started"
    run_dir: str
    attempt: int = 1
    resumed_from: str | None = None  # a resumed run: how its last attempt ended


class RunFinished(Event):
    type: Literal["run_finished"] = "run_finished"
    status: str
    error: str | None = None


class StepStarted(Event):
    type: Literal["step_started"] = "step_started"
    step: str
    total: int | None = None  # units of work the step expects (rows, tasks), when known


class StepFinished(Event):
    type: Literal["step_finished"] = "step_finished"
    step: str
    duration_s: float
    ok: bool = True


class RowsGenerated(Event):
    """Progress: `n` more rows (or tasks) of `step` are done; `total` updates the expectation."""

    type: Literal["rows_generated"] = "rows_generated"
    step: str
    n: int
    total: int | None = None


class RowDropped(Event):
    type: Literal["row_dropped"] = "row_dropped"
    by: str = ""
    reason: str
    n: int = 1
    row_id: str | None = None


class Counted(Event):
    type: Literal["counted"] = "counted"
    what: str
    n: int = 1


class UsageCharged(Event):
    """Tokens and cost of model requests; `cost_usd` None means the price is unknown."""

    type: Literal["usage_charged"] = "usage_charged"
    model: str
    alias: str | None = None
    task_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    requests: int = 1
    failed_requests: int = 0
    cost_usd: float | None = 0.0

    @classmethod
    def of(cls, usage: Usage, cost_usd: float | None, **fields: Any) -> UsageCharged:
        return cls(**usage.model_dump(), cost_usd=cost_usd, **fields)

    def usage(self) -> Usage:
        return Usage(**{k: getattr(self, k) for k in Usage.model_fields})


class TaskStarted(Event):
    type: Literal["task_started"] = "task_started"
    task_id: str
    executor: str


class TaskOutput(Event):
    type: Literal["task_output"] = "task_output"
    task_id: str
    text: str


class TaskFinished(Event):
    type: Literal["task_finished"] = "task_finished"
    task_id: str
    status: str
    reason: str | None = None
    duration_s: float | None = None


class SinkWrote(Event):
    type: Literal["sink_wrote"] = "sink_wrote"
    sink: str
    rows: int | None  # None: the sink did not say
    paths: list[str] = Field(default_factory=list)


class Artifact(Event):
    """A file a run wrote beside its data (e.g. report.html), listed in run.json."""

    type: Literal["artifact"] = "artifact"
    name: str
    path: str


class Reported(Event):
    """A plugin's own section of run.json (e.g. `routing`; never a kernel key), the latest whole."""

    type: Literal["reported"] = "reported"
    section: str
    data: dict[str, Any]


class Note(Event):
    type: Literal["note"] = "note"
    text: str


AnyEvent = Annotated[
    RunStarted | RunFinished | StepStarted | StepFinished | RowsGenerated | RowDropped | Counted
    | UsageCharged | TaskStarted | TaskOutput | TaskFinished | SinkWrote | Artifact | Note
    | Reported,
    Field(discriminator="type"),
]  # fmt: skip
EVENT = TypeAdapter(AnyEvent)


def read_events(path: Path) -> list[Event]:
    """The events of an events.jsonl (a torn last line, from a kill, is skipped)."""
    out: list[Event] = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        with suppress(ValueError):  # a torn line
            out.append(EVENT.validate_json(line))
    return out


Subscriber = Callable[[Event], None]


class EventBus:
    """Appends each event to `path` and hands it to every subscriber, in order, under a lock
    (runners report from worker threads). `redact` scrubs every text field of an event first."""

    def __init__(self, path: Path | None = None, redact: Callable[[str], str] | None = None):
        self.subscribers: list[Subscriber] = []
        self.redact = redact
        self._lock = threading.RLock()
        self._file = path.open("a", encoding="utf-8") if path is not None else None
        if path is not None and path.stat().st_size:
            with path.open("rb") as old:  # a line torn by a kill must not swallow the next
                old.seek(-1, 2)
                self._file.write("" if old.read() == b"\n" else "\n")  # type: ignore[union-attr]

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    def emit(self, event: Event) -> None:
        line = event.model_dump_json()  # all of it: ids, paths and names come from the data too
        if self.redact is not None and (redacted := self.redact(line)) != line:
            line, event = redacted, type(event).model_validate_json(redacted)  # JSON stays JSON
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
            for subscriber in self.subscribers:
                subscriber(event)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


MAX_NOTES, MAX_IDS = 200, 50  # run.json stays readable; counts carry the totals


@dataclass
class Tally:
    """Every count of a run, kept from its events: what run.json, the report and the terminal
    say. Costs are summed where known; a model with tokens but no price is listed as unknown."""

    counts: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    task_cost_usd: float = 0.0  # what executors charged (the run's budget_usd caps it)
    unpriced: set[str] = field(default_factory=set)
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_alias: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: dict[str, str] = field(default_factory=dict)  # task id: its last status (a retry's)
    running: set[str] = field(default_factory=set)
    timings: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, list[str]] = field(default_factory=dict)
    written: dict[str, int | None] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    progress: dict[str, list[int | None]] = field(default_factory=dict)  # step: [done, total]
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)  # plugins' (`Reported`)
    dropped_ids: dict[str, list[str]] = field(default_factory=dict)  # reason: the first MAX_IDS

    def __call__(self, event: Event) -> None:
        getattr(self, f"_on_{event.type}", lambda _: None)(event)

    def _on_step_started(self, e: StepStarted) -> None:
        self.progress[e.step] = [0, e.total]

    def _on_step_finished(self, e: StepFinished) -> None:
        self.timings[e.step] = round(self.timings.get(e.step, 0.0) + e.duration_s, 4)

    def _on_rows_generated(self, e: RowsGenerated) -> None:
        done = self.progress.setdefault(e.step, [0, None])
        done[:] = [(done[0] or 0) + e.n, done[1] if e.total is None else e.total]

    def _on_row_dropped(self, e: RowDropped) -> None:
        key = f"{e.by}: {e.reason}" if e.by else e.reason
        self.dropped[key] += e.n
        if e.row_id and len(ids := self.dropped_ids.setdefault(key, [])) < MAX_IDS:
            ids.append(e.row_id)  # which rows (files, ids): a user can find what was left out

    def _on_counted(self, e: Counted) -> None:
        self.counts[e.what] += e.n

    def _on_note(self, e: Note) -> None:
        self.notes.append(e.text)

    def _on_usage_charged(self, e: UsageCharged) -> None:
        self.usage = self.usage + e.usage()
        if unknown := e.cost_usd is None and bool(e.input_tokens or e.output_tokens):
            self.unpriced.add(e.model)
        self.cost_usd += e.cost_usd or 0.0
        self.task_cost_usd += (e.cost_usd or 0.0) if e.task_id else 0.0
        for table, key in ((self.by_model, e.model), (self.by_alias, e.alias)):
            if key is None:
                continue
            row = table.setdefault(key, Counter())
            for name in (*Usage.model_fields, "requests", "failed_requests"):
                row[name] += getattr(e, name)
            was = row["cost_usd"]  # None once a model without a price answered: unknown, not $0
            row["cost_usd"] = None if unknown or was is None else round(was + (e.cost_usd or 0), 6)

    def add_earlier(self, events: Iterable[Event]) -> None:
        """Count the usage, cost and ended tasks of a resumed run's earlier attempts (its
        events.jsonl before this attempt's first event): run.json says what the whole run did."""
        for event in events:
            if isinstance(event, UsageCharged | TaskFinished):
                self(event)

    def _on_task_started(self, e: TaskStarted) -> None:
        self.running.add(e.task_id)
        self.ended.pop(e.task_id, None)  # started again (a resume, a retry): not ended now

    def _on_task_finished(self, e: TaskFinished) -> None:
        self.running.discard(e.task_id)
        self.ended[e.task_id] = e.status

    def _on_run_finished(self, e: RunFinished) -> None:  # a stopped run's tasks: resumable
        self.ended |= dict.fromkeys(self.running, "interrupted")
        self.running.clear()

    @property
    def tasks(self) -> Counter[str]:
        return Counter(self.ended.values())

    def _on_sink_wrote(self, e: SinkWrote) -> None:
        self.outputs[e.sink] = e.paths
        self.written[e.sink] = e.rows

    def _on_artifact(self, e: Artifact) -> None:
        self.artifacts[e.name] = e.path

    def _on_reported(self, e: Reported) -> None:
        self.sections[e.section] = e.data

    @property
    def kept(self) -> int | None:
        """Rows the sinks wrote (the fewest when several disagree); None when unknown."""
        values = list(self.written.values())
        return None if not values or None in values else min(v or 0 for v in values)

    def summary(self) -> dict[str, Any]:
        counts: dict[str, Any] = {**self.counts, "kept": self.kept, "dropped": dict(self.dropped)}
        counts.update(dropped_total=sum(self.dropped.values()), kept_by_sink=dict(self.written))
        more = len(self.notes) - MAX_NOTES
        out: dict[str, Any] = {
            "counts": counts, "usage": self.usage.model_dump(), "outputs": self.outputs,
            "cost_usd": None if self.unpriced else round(self.cost_usd, 6),  # unknown: not $0
            "usage_by_model": {k: dict(v) for k, v in self.by_model.items()},
            "usage_by_alias": {k: dict(v) for k, v in self.by_alias.items()},
            "notes": self.notes[:MAX_NOTES] + ([f"... and {more} more"] if more > 0 else []),
            "dropped_rows": self.dropped_ids, "timings_s": dict(self.timings),
            "artifacts": self.artifacts,
        }  # fmt: skip
        out.update({k: v for k, v in self.sections.items() if k not in out})
        if self.unpriced:  # the priced models' cost, and which had no price
            out["cost_known_usd"] = round(self.cost_usd, 6)
            out["cost_unknown_for"] = sorted(self.unpriced)
        if self.ended or self.running:
            out["tasks"] = {**self.tasks, "running": len(self.running)}
        return out
