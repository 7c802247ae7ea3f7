"""Jobs: each a run directory under the jobs root, run by a `bashgym run` child process.

Nothing about a job is kept in memory. What it was asked is `job.json` (written once) and the
run file `job.toml`; how it goes is the run's own `run.json`, `events.jsonl` and `run.lock`;
the child's output is `job.log`; the last child started is `launch.json`; a cancel asked is the
file `cancelled`. So a restarted server lists, cancels and resumes every job it finds, and a
job that crashes (or is killed) is only a status, never the server's problem.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from bashgym.events import RunStarted, Tally, read_events
from bashgym.resume import read_status
from bashgym.text import plain
from bashgym_api import procs

JOB_FILE = "job.json"
SPEC_FILE = "job.toml"
LAUNCH_FILE = "launch.json"
CANCEL_FILE = "cancelled"
LOG_FILE = "job.log"
EVENTS_FILE = "events.jsonl"
DROPPED_FILE = "dropped.jsonl"
ORCHESTRATOR_DIR = "job"  # an orchestration job's own directory, inside the API's
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
LIVE = ("pending", "starting", "running", "cancelling")
RESUMABLE = ("interrupted", "failed", "cancelled", "retrying")  # retrying: `orchestrate retry`


class JobError(Exception):
    """A request about a job that cannot be served: `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)  # atomic: a reader never sees half a file


def log_tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log (at most 64 KB read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - 65536))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Jobs:
    """The jobs under `root`; see the module docstring."""

    def __init__(self, root: Path, *, grace_s: float = 10.0, env: dict[str, str] | None = None):
        self.root = root.absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        self.grace_s = grace_s
        self.env = env

    # -- finding ---------------------------------------------------------------------------

    def dir(self, job_id: str) -> Path:
        """The job's directory, or a 404 naming the id (an id is never a path)."""
        if not JOB_ID.match(job_id) or not (self.root / job_id / JOB_FILE).is_file():
            raise JobError(404, f"no job {job_id!r} under {self.root}")
        return self.root / job_id

    def ids(self) -> list[str]:
        """Every job's id, newest first."""
        found = [(read_json(p).get("created_at", 0), p.parent.name) for p in self._job_files()]
        return [job_id for _, job_id in sorted(found, reverse=True)]

    def _job_files(self) -> Iterator[Path]:
        for path in self.root.glob(f"*/{JOB_FILE}"):
            if JOB_ID.match(path.parent.name):
                yield path

    def new_dir(self, label: str, kind: str, request: dict[str, Any]) -> Path:
        """A new job directory with its job.json (created atomically: ids never collide)."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:40] or kind
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        while True:
            job_id = f"{stamp}-{safe}-{secrets.token_hex(2)}"
            try:
                (self.root / job_id).mkdir()
                break
            except FileExistsError:
                continue
        job_dir = self.root / job_id
        doc = {"id": job_id, "kind": kind, "label": label, "created_at": time.time(), **request}
        write_json(job_dir / JOB_FILE, doc)
        return job_dir

    # -- running ---------------------------------------------------------------------------

    def launch(self, job_dir: Path, argv: list[str]) -> int:
        """Start the job's child (`argv`, run in the server's working directory)."""
        pid = procs.start(argv, job_dir / LOG_FILE, env=self.env)
        write_json(job_dir / LAUNCH_FILE, {"pid": pid, "argv": argv, "started_at": time.time()})
        return pid

    def pids(self, job_dir: Path) -> list[int]:
        """Processes of the job that still run: the child started, and the run's lock holder."""
        marker = str(job_dir)
        pids = [read_json(job_dir / LAUNCH_FILE).get("pid"), self._lock_pid(job_dir)]
        return [p for p in dict.fromkeys(pids) if isinstance(p, int) and procs.alive(p, marker)]

    @staticmethod
    def run_dir(job_dir: Path) -> Path:
        """Where the job's run writes (run.json, events.jsonl, run.lock): the job's directory,
        or for an orchestration job the orchestrator's own job directory inside it."""
        if read_json(job_dir / JOB_FILE).get("kind") == "orchestration":
            return job_dir / ORCHESTRATOR_DIR
        return job_dir

    def _lock_pid(self, job_dir: Path) -> int | None:
        pid = read_json(self.run_dir(job_dir) / "run.lock").get("pid")
        return pid if isinstance(pid, int) else None

    def running(self, job_dir: Path) -> bool:
        return bool(self.pids(job_dir))

    def cancel(self, job_id: str) -> dict[str, Any]:
        """SIGTERM the job's process group (SIGKILL after the grace): the run records itself
        interrupted and keeps its finished work; the job's status is `cancelled`."""
        job_dir = self.dir(job_id)
        pids = self.pids(job_dir)
        if not pids:
            raise JobError(409, f"job {job_id!r} is not running (status {self.status(job_dir)})")
        (job_dir / CANCEL_FILE).write_text(str(time.time()))
        for pid in pids:
            procs.stop_group(pid, str(job_dir), self.grace_s)
        return {"id": job_id, "status": "cancelling"}

    def resume_argv(self, job_dir: Path) -> list[str]:
        argv = read_json(job_dir / LAUNCH_FILE).get("argv")
        if not isinstance(argv, list) or not argv:
            raise JobError(409, f"job {job_dir.name!r} was never started: nothing to resume")
        return [str(a) for a in argv]

    def resume(self, job_id: str) -> dict[str, Any]:
        """Start the job's command again: the run resumes where it stopped (the engine finds
        the unfinished run of the same config in the same directory)."""
        job_dir = self.dir(job_id)
        status = self.status(job_dir)
        if status not in RESUMABLE:
            raise JobError(
                409, f"job {job_id!r} is {status}: only an interrupted, failed or cancelled job "
                "resumes",
            )  # fmt: skip
        argv = self.resume_argv(job_dir)
        (job_dir / CANCEL_FILE).unlink(missing_ok=True)
        self.launch(job_dir, argv)
        return {"id": job_id, "status": "starting"}

    # -- reading ---------------------------------------------------------------------------

    def status(self, job_dir: Path) -> str:
        """From disk only: a live child or lock holder is running (or cancelling); otherwise
        run.json's status, `cancelled` when a cancel was asked, `failed` when the child died
        without recording an end."""
        if read_json(job_dir / JOB_FILE).get("kind") == "orchestration":
            return self.orchestration_status(job_dir)
        run = read_status(job_dir).get("status")
        cancelled = (job_dir / CANCEL_FILE).is_file()
        if self.running(job_dir):
            return "cancelling" if cancelled else ("running" if run else "starting")
        if not (job_dir / LAUNCH_FILE).is_file():
            return "pending"
        if cancelled and run in (None, "running", "interrupted", "failed", "retrying"):
            return "cancelled"
        if run is None or run == "running":
            return "failed"  # the child ended before the run started, or was killed
        return str(run)

    def orchestration_status(self, job_dir: Path) -> str:
        """An orchestration job's: planning (the planner runs), awaiting_approval, running,
        cancelling, cancelled, then its run's end (ok, empty, failed, interrupted)."""
        odir = job_dir / ORCHESTRATOR_DIR
        plan = read_json(odir / "plan.json")
        cancelled = (job_dir / CANCEL_FILE).is_file()
        if self.running(job_dir):
            if cancelled:
                return "cancelling"
            return "running" if plan.get("approved") else "planning"
        if not plan:
            return "failed" if (job_dir / LAUNCH_FILE).is_file() else "pending"
        if not plan.get("approved"):
            return "awaiting_approval"
        run = read_status(odir).get("status")
        if cancelled and run in (None, "running", "interrupted", "failed", "retrying"):
            return "cancelled"
        if run is None:
            return "approved"
        return "failed" if run == "running" else str(run)

    def summary(self, job_id: str) -> dict[str, Any]:
        """A row of the jobs list: id, kind, status, kept of requested, cost, age."""
        job_dir = self.dir(job_id)
        job = read_json(job_dir / JOB_FILE)
        run_dir = self.run_dir(job_dir)
        run = read_status(run_dir)
        counts = run.get("counts") or {}
        if not counts and (run_dir / EVENTS_FILE).is_file():
            counts = live_tally(run_dir / EVENTS_FILE).summary()["counts"]
        return {
            "id": job_id,
            "kind": job.get("kind", "run"),
            "label": job.get("label"),
            "status": self.status(job_dir),
            "requested": counts.get("requested"),
            "kept": counts.get("kept"),
            "cost_usd": run.get("cost_usd"),
            "created_at": job.get("created_at"),
            "age_s": round(time.time() - float(job.get("created_at") or time.time()), 1),
        }

    def detail(self, job_id: str) -> dict[str, Any]:
        """Everything about a run job: status, counts, dropped by reason, usage, cost, timings,
        progress per step, outputs and artifacts (report.html), the error if it failed."""
        job_dir = self.dir(job_id)
        job = read_json(job_dir / JOB_FILE)
        status = self.status(job_dir)
        run = read_status(job_dir)
        tally = live_tally(job_dir / EVENTS_FILE)
        live = tally.summary()
        done = status not in LIVE and run.get("status") not in (None, "running")
        source = run if done else live
        counts = dict(source.get("counts") or {})
        out: dict[str, Any] = {
            **self.summary(job_id),
            "spec": job.get("spec"),
            "run_dir": str(job_dir),
            "attempt": run.get("attempt"),
            "started_at": run.get("started_at"),
            "ended_at": run.get("ended_at"),
            "counts": counts,
            "dropped": counts.get("dropped", {}),
            "usage": source.get("usage"),
            "cost_usd": source.get("cost_usd"),
            "usage_by_model": source.get("usage_by_model"),
            "timings_s": run.get("timings_s") if done else live.get("timings_s"),
            "progress": {step: {"done": d, "total": t} for step, (d, t) in tally.progress.items()},
            "tasks": source.get("tasks"),
            "outputs": run.get("outputs") or live.get("outputs"),
            "artifacts": run.get("artifacts") or live.get("artifacts"),
            "notes": run.get("notes") or live.get("notes"),
            "error": run.get("error") or run.get("warning"),
            "events_bytes": _size(job_dir / EVENTS_FILE),
        }
        out["requested"] = counts.get("requested", out["requested"])
        out["kept"] = counts.get("kept", out["kept"])
        if status == "failed" and not out["error"]:
            tail = log_tail(job_dir / LOG_FILE, 5)
            out["error"] = tail or "the job's process ended without a word"
        report = (out["artifacts"] or {}).get("report")
        out["report_url"] = f"/jobs/{job_id}/report.html" if report else None
        return out

    def rows(self, job_id: str, which: str, offset: int, limit: int) -> dict[str, Any]:
        """A page of the kept rows (the first sink's files) or of the dropped ones (with who
        dropped each and why). Both were scrubbed by the run before they were written."""
        job_dir = self.dir(job_id)
        if which == "dropped":
            path = job_dir / DROPPED_FILE
            total, rows = _jsonl_page([path] if path.is_file() else [], offset, limit)
            return {"which": which, "total": total, "offset": offset, "rows": rows, "files": []}
        outputs = read_status(job_dir).get("outputs") or {}
        files = [Path(p) for paths in outputs.values() for p in paths]
        parquet = [p for p in files if p.suffix == ".parquet" and p.is_file()]
        jsonl = [p for p in files if p.suffix == ".jsonl" and p.is_file()]
        if parquet:
            total, rows = _parquet_page(parquet, offset, limit)
        elif jsonl:
            total, rows = _jsonl_page(jsonl, offset, limit)
        else:
            total, rows = 0, []
        used = parquet or jsonl
        return {
            "which": which, "total": total, "offset": offset, "rows": rows,
            "files": [str(p) for p in used],
        }  # fmt: skip


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def live_tally(events: Path) -> Tally:
    """The counts of the run's current attempt from its events (what earlier attempts add,
    through `Tally.add_earlier`, as the engine does), as the engine's own tally has them: what
    run.json will say, before it does."""
    all_events = read_events(events)
    starts = [i for i, e in enumerate(all_events) if isinstance(e, RunStarted)]
    cut = starts[-1] if starts else 0
    tally = Tally()
    tally.add_earlier(all_events[:cut])
    for event in all_events[cut:]:
        tally(event)
    return tally


def _jsonable(rows: list[Any]) -> list[Any]:
    return json.loads(json.dumps([plain(r) for r in rows], default=str))


def _jsonl_page(paths: list[Path], offset: int, limit: int) -> tuple[int, list[Any]]:
    total, page = 0, []
    for path in paths:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                if offset <= total < offset + limit:
                    try:
                        page.append(json.loads(line))
                    except ValueError:
                        page.append({"unreadable_line": line[:500]})
                total += 1
    return total, _jsonable(page)


def _parquet_page(paths: list[Path], offset: int, limit: int) -> tuple[int, list[Any]]:
    import pyarrow.parquet as pq  # ~0.1 s: only when rows are asked for

    total, page = 0, []
    for path in sorted(paths):
        meta = pq.ParquetFile(path).metadata
        n = meta.num_rows
        start, stop = max(offset - total, 0), min(offset + limit - total, n)
        if start < stop:
            page += pq.read_table(path).slice(start, stop - start).to_pylist()
        total += n
    return total, _jsonable(page)
