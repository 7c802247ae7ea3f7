"""Progress of a run, from its events: a live display on a terminal, plain lines otherwise.

On a terminal each step is a rich progress bar. When stderr is not a terminal (CI, a pipe, a
log file) a line is printed when a step starts or ends and every `interval` seconds in between —
even when no event arrives, so a long model call never looks like a hang; never a line per row.

A step's end says how it ended: `done in`, `failed in`, or `interrupted after` when the run
was stopped (Ctrl-C, SIGTERM). The engine ends a step in a `finally`, before anyone knows why the
run stops, so a step that did not finish is said when the next event that tells comes: the
run's end (`RunFinished`'s status), or a next step (the run went on: it failed). Its count is
said only when the step reported one (`RowsGenerated`): scrubbing reports none, and `0 done`
(or `0/0`) after it had scrubbed every row was false.

A step's parts report as steps named under it (`pipeline column answer` while `pipeline` runs:
the datadesigner runner's per-column progress inside a batch). They show as bars indented under
their step on a terminal, and on the step's timed line otherwise, while they are under way.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from bashgym.events import Event, RowsGenerated, RunFinished, StepFinished, StepStarted, Tally


@dataclass(frozen=True)
class Ended:
    """A step's end as the display says it: `how` is done, failed or interrupted; `done` its
    count, None when it reported none; `elapsed` the run's seconds when it ended."""

    step: str
    how: str
    duration_s: float
    done: int | None
    elapsed: float

    def text(self) -> str:
        took = "after" if self.how == "interrupted" else "in"
        count = "" if self.done is None else f" ({self.done} done)"
        return f"{self.step}: {self.how} {took} {self.duration_s:.1f}s{count}"


class CountColumn(MofNCompleteColumn):
    """M/N, blank for a step that reported no count (`uncounted`): `0/0` said nothing true."""

    def render(self, task: Task) -> Text:
        return Text("") if task.fields.get("uncounted") else super().render(task)


class RunProgress:
    def __init__(self, console: Console, tally: Tally, *, interval: float = 5.0) -> None:
        self.console, self.tally, self.interval = console, tally, interval
        self.live = console.is_terminal
        self.started = time.monotonic()
        self.current: str | None = None
        self._bar: Progress | None = None
        self._tasks: dict[str, Any] = {}
        self._parts: dict[str, list[str]] = {}  # step -> its parts' step names, in order
        self._counted: set[str] = set()  # the steps that reported a count (`RowsGenerated`)
        self._unsaid: list[Ended] = []  # steps that did not finish, till we know why (above)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                CountColumn(), TextColumn("{task.fields[extra]}"), TimeElapsedColumn(),
                console=self.console, transient=False,
            )  # fmt: skip
            self._bar.start()
        else:
            self._ticker = threading.Thread(target=self._tick, name="bashgym-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._say_unsaid("failed")  # closed before the run's end said why: it failed
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()
        if self._ticker is not None:
            self._ticker.join(timeout=1)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RowsGenerated):
            self._counted.add(event.step)
        if isinstance(event, RunFinished):
            self._say_unsaid("interrupted" if event.status == "interrupted" else "failed")
        elif isinstance(event, StepStarted):
            self._say_unsaid("failed")  # the run went on after it
            self.current = event.step
            if self._bar is not None:
                self._tasks[event.step] = self._bar.add_task(
                    event.step, total=event.total, extra=""
                )
            else:
                self._line(f"{event.step}: started")
        elif isinstance(event, RowsGenerated) and self._bar is not None:
            task = self._tasks.get(event.step)
            parent = self._parent(event.step)
            if task is None and parent is not None:
                part = event.step[len(parent) + 1 :]
                task = self._bar.add_task(f"  {part}", total=event.total, extra="")
                self._tasks[event.step] = task
                self._parts.setdefault(parent, []).append(event.step)
            if task is not None:
                extra = "" if parent is not None else self._extra()
                self._bar.update(task, advance=event.n, total=event.total, extra=extra)
        elif isinstance(event, StepFinished):
            self._finished(event)

    def _finished(self, event: StepFinished) -> None:
        """A step's end: its bar filled (to its count, or whole without one), its parts' bars
        gone; said at once when it finished, else when the next event says why (`_unsaid`)."""
        counted = event.step in self._counted
        done = (self.tally.progress.get(event.step, [0, None])[0] or 0) if counted else None
        ended = Ended(event.step, "done", event.duration_s, done, self._elapsed())
        if self._bar is not None and event.step in self._tasks:
            whole = {"total": done, "completed": done} if counted else {"total": 1, "completed": 1}
            self._bar.update(self._tasks[event.step], uncounted=not counted, **whole)
            for part in self._parts.pop(event.step, []):  # the step's own line says it all
                self._bar.remove_task(self._tasks.pop(part))
        if not event.ok:
            self._unsaid.append(ended)
        elif self._bar is None:
            self._line(ended.text(), at=ended.elapsed)
        self.current = None

    def _say_unsaid(self, how: str) -> None:
        """The steps that did not finish, now that the run says why (`how`)."""
        unsaid, self._unsaid = self._unsaid, []
        for ended in unsaid:
            if self._bar is not None and ended.step in self._tasks:
                self._bar.update(self._tasks[ended.step], description=f"{ended.step} ({how})")
            elif self._bar is None:
                self._line(replace(ended, how=how).text(), at=ended.elapsed)

    def _parent(self, step: str) -> str | None:
        """The running step `step` is a part of (`pipeline` for `pipeline column x`), if any."""
        current = self.current
        return current if current is not None and step.startswith(current + " ") else None

    def _parts_text(self, step: str) -> str:
        """The parts of `step` under way, e.g. `column answer 7/12, column quality 3/12`."""
        parts = []
        for name, (done, total) in list(self.tally.progress.items()):
            if name.startswith(step + " ") and total and (done or 0) < total:
                parts.append(f"{name[len(step) + 1 :]} {done or 0}/{total}")
        return ", ".join(parts)

    def _extra(self) -> str:
        parts = []
        dropped = sum(self.tally.dropped.values())
        if dropped:
            parts.append(f"{dropped} dropped")
        tasks, running = self.tally.tasks, len(self.tally.running)  # every attempt's, once each
        if tasks or running:
            stopped = tasks.get("interrupted", 0)
            failed = sum(tasks.values()) - tasks.get("success", 0) - stopped
            parts.append(
                f"{tasks.get('success', 0)} ok, {failed} failed, "
                + (f"{stopped} interrupted" if stopped else f"{running} running")
            )
        tokens = self.tally.usage.input_tokens + self.tally.usage.output_tokens
        if tokens:
            parts.append(f"{tokens:,} tokens")
        if self.tally.unpriced:  # the priced part, never a false total; run.json and the report
            known = f"${self.tally.cost_usd:.4f} + " if self.tally.cost_usd else ""  # name the
            parts.append(f"{known}cost unknown")  # models, which a line every few s need not
        elif self.tally.cost_usd:
            parts.append(f"${self.tally.cost_usd:.4f}")
        return " · ".join(parts)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            step = self.current
            if step is None:
                continue
            done, total = self.tally.progress.get(step, [0, None])
            of = f"/{total}" if total else ""
            extra = " · ".join(x for x in (self._parts_text(step), self._extra()) if x)
            self._line(f"{step}: {done or 0}{of} done" + (f" · {extra}" if extra else ""))

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _line(self, text: str, at: float | None = None) -> None:
        """One timed line (`at`: the run's seconds it tells of, default now), never broken: off
        a terminal the console is 80 columns wide, and a line wrapped there (with trailing
        spaces) leaves a continuation without its `[m:ss]` prefix, which grep and log parsers
        cannot place. soft_wrap writes it whole."""
        elapsed = int(self._elapsed() if at is None else at)
        self.console.print(
            f"[{elapsed // 60}:{elapsed % 60:02d}] {text}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
