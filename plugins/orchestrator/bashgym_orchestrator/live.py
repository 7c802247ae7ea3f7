"""What a person sees of a job: a live table while it runs on a terminal, plain lines when not
(a log, CI), and the table `orchestrate status` prints. Both are built from the run's events
(an `on_event` subscriber), like every other display: nothing here keeps its own count."""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from bashgym import hookimpl
from bashgym.events import Event
from bashgym_orchestrator.status import reason_text

STYLE = {
    "running": "cyan",
    "merged": "green",
    "conflicted": "yellow",
    "failed": "red",
    "blocked": "red",
    "retrying": "yellow",
    "interrupted": "yellow",
}


class JobDisplay:
    """An `on_event` plugin object for one `orchestrate run`: the live table on a terminal,
    else a line per task event."""

    def __init__(self, console: Console, earlier: dict[str, int] | None = None) -> None:
        self.console = console
        # each task's attempts that ended before this run (a resumed or retried job): its next
        # `task_started` is the task's attempt after those, as job.json and `status` count
        self.earlier = dict(earlier or {})
        self.live = console.is_terminal
        self.started = time.monotonic()
        self.rows: dict[str, dict[str, Any]] = {}
        self._live: Live | None = None
        self._lock = threading.Lock()
        self._tally: Any = None

    @hookimpl
    def on_event(self, event: Event, run: Any) -> None:
        self._tally = run.tally
        with self._lock:
            line = self._apply(event)
            if self.live:
                if self._live is None and self.rows:
                    self._live = Live(self._table(), console=self.console, refresh_per_second=4)
                    self._live.start()
                elif self._live is not None:
                    self._live.update(self._table())
            elif line:
                elapsed = int(time.monotonic() - self.started)
                self.console.print(
                    f"[{elapsed // 60}:{elapsed % 60:02d}] {line}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )

    def _apply(self, e: Any) -> str | None:
        """Update the task's row from `e`; the plain line it makes (None: none)."""
        kind, tid = e.type, getattr(e, "task_id", None)
        if tid is None or kind not in WATCHED:
            return (
                "verify: " + ("passed" if e.ok else f"failed (exit {e.exit_code})")
                if (kind == "verify_result")
                else None
            )
        row = self.rows.setdefault(
            tid,
            {
                "state": "pending",
                "attempt": self.earlier.get(tid, 0),
                "executor": "",
                "note": "",
                "since": time.monotonic(),
            },
        )
        if kind == "task_started":
            row.update(
                state="running",
                attempt=row["attempt"] + 1,
                executor=e.executor,
                since=time.monotonic(),
                note="",
            )
            return f"{tid}: started attempt {row['attempt']} on {e.executor}"
        if kind == "task_failed":
            row.update(state="failed" if e.final else "retrying", note=e.reason)
            return f"{tid}: attempt {e.attempt} failed{'' if e.final else ', retrying'}: {e.reason}"
        if kind == "task_blocked":
            row.update(state="blocked", note=e.reason)
            return f"{tid}: blocked: {e.reason}"
        if kind == "merge_result":
            row.update(
                state="merged" if e.outcome != "conflicted" else "conflicted",
                note=", ".join(e.conflicts) or e.branch,
            )
            return f"{tid}: {e.outcome} ({', '.join(e.conflicts) or e.branch})"
        if kind == "task_completed":
            row["note"] = f"{len(e.files)} files +{e.insertions} -{e.deletions}"
            return f"{tid}: completed ({row['note']})"
        return None

    def _table(self) -> Table:
        table = Table(box=None, pad_edge=False)
        for name in ("task", "state", "try", "executor", "time", "note"):
            table.add_column(name, overflow="fold" if name == "note" else "ellipsis")
        for tid, row in self.rows.items():
            style = STYLE.get(row["state"], "")
            took = int(time.monotonic() - row["since"]) if row["state"] == "running" else None
            table.add_row(
                escape(tid),
                f"[{style}]{row['state']}[/]" if style else row["state"],
                str(row["attempt"] or ""),
                escape(row["executor"]),
                "" if took is None else f"{took}s",
                escape(str(row["note"])[:80]),
            )
        if self._tally is not None:
            table.caption = f"spent ${self._tally.cost_usd:.4f}"
            if self._tally.unpriced:  # what the models without a price spent is not in it
                table.caption += f" + unknown ({', '.join(sorted(self._tally.unpriced))})"
            if self._tally.kept is not None:  # the sinks written as the job goes
                table.caption += f" · {self._tally.kept} rows in the sinks"
        return table

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None


WATCHED = {"task_started", "task_failed", "task_blocked", "merge_result", "task_completed"}


def status_table(status: dict[str, Any]) -> Table:
    """`orchestrate status`: one row per task, the job's state and counts as the title."""
    counts = ", ".join(f"{n} {s}" for s, n in sorted(status["counts"].items()))
    table = Table(
        title=f"{escape(status['title'])} — {status['status']} ({counts})",
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    for name in ("task", "state", "priority", "tries", "executor", "cost", "branch / why"):
        table.add_column(name)
    for tid, task in status["tasks"].items():
        state = task.get("state", "?")
        style = STYLE.get(state, "")
        why = (
            reason_text(state, task.get("reason"))
            or ", ".join(task.get("conflicts") or [])
            or task.get("branch")
        )
        cost = task.get("cost_usd")
        spent = "unknown" if "cost_usd" in task else ""  # attempts at no known price: not $0
        if cost is not None:
            spent = f"${cost:.4f}"
        table.add_row(
            escape(tid),
            f"[{style}]{state}[/]" if style else state,
            task.get("priority", ""),
            str(task.get("attempts", "")),
            escape(task.get("executor", "")),
            spent,
            escape(str(why or "")),
        )
    verify = status.get("verify")
    if verify is not None:
        table.caption = f"verify `{verify['command']}`: {'passed' if verify['ok'] else 'failed'}"
    return table
