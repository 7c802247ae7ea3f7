"""Progress of a run, from its events: a live display on a terminal, plain lines otherwise.

On a terminal each step is a rich progress bar. When stderr is not a terminal (CI, a pipe, a
log file) a line is printed when a step starts or ends and every `interval` seconds in between —
even when no event arrives, so a long model call never looks like a hang; never a line per row.

A step's parts report as steps named under it (`pipeline column answer` while `pipeline` runs:
the datadesigner runner's per-column progress inside a batch). They show as bars indented under
their step on a terminal, and on the step's timed line otherwise, while they are under way.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from bashgym.events import Event, RowsGenerated, StepFinished, StepStarted, Tally


class RunProgress:
    def __init__(self, console: Console, tally: Tally, *, interval: float = 5.0) -> None:
        self.console, self.tally, self.interval = console, tally, interval
        self.live = console.is_terminal
        self.started = time.monotonic()
        self.current: str | None = None
        self._bar: Progress | None = None
        self._tasks: dict[str, Any] = {}
        self._parts: dict[str, list[str]] = {}  # step -> its parts' step names, in order
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                MofNCompleteColumn(), TextColumn("{task.fields[extra]}"), TimeElapsedColumn(),
                console=self.console, transient=False,
            )  # fmt: skip
            self._bar.start()
        else:
            self._ticker = threading.Thread(target=self._tick, name="bashgym-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()
        if self._ticker is not None:
            self._ticker.join(timeout=1)

    def __call__(self, event: Event) -> None:
        if isinstance(event, StepStarted):
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
            done = self.tally.progress.get(event.step, [0, None])[0] or 0
            if self._bar is not None and event.step in self._tasks:
                self._bar.update(self._tasks[event.step], total=done, completed=done)
                for part in self._parts.pop(event.step, []):  # the step's own line says it all
                    self._bar.remove_task(self._tasks.pop(part))
            elif self._bar is None:
                ended = "done" if event.ok else "failed"
                self._line(f"{event.step}: {ended} in {event.duration_s:.1f}s ({done} done)")
            self.current = None

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
        if self.tally.tasks or self.tally.running:
            failed = sum(n for s, n in self.tally.tasks.items() if s != "success")
            parts.append(
                f"{self.tally.tasks.get('success', 0)} ok, {failed} failed, "
                f"{len(self.tally.running)} running"
            )
        tokens = self.tally.usage.input_tokens + self.tally.usage.output_tokens
        if tokens:
            parts.append(f"{tokens:,} tokens")
        if self.tally.cost_usd:
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

    def _line(self, text: str) -> None:
        """One timed line, never broken: off a terminal the console is 80 columns wide, and a
        line wrapped there (with trailing spaces) leaves a continuation without its `[m:ss]`
        prefix, which grep and log parsers cannot place. soft_wrap writes it whole."""
        elapsed = int(time.monotonic() - self.started)
        self.console.print(
            f"[{elapsed // 60}:{elapsed % 60:02d}] {text}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
