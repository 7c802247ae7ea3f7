"""Sessions parsed in worker processes, handed back in order.

Why: parsing is most of the source's time and one core does it at 100-150 MB/s, while a run
from transcripts to training lines also scrubs and writes in the same process. On a machine
with more than one CPU, workers parse the sessions (each with its subagents) and the run's
process only makes the finished Traces again, from their fields (`model_dump`, pickled):
pydantic's validation, in Rust, cost the run's process less than loading pickles of the models
themselves (0.81 against 0.92 s of CPU for a 250 MB corpus, with the row's JSON made after
either; measured), and needs no pickling through pydantic's internals. What a session's parse
tells the run (counts, bad lines) is recorded in the worker and replayed in the run's process
in the order the sessions come, so run.json says exactly what a parse in one process says.

Workers are plain child processes of this interpreter (`_worker.py`), fed jobs and answering
with pickles over their stdin and stdout: not forked, because the run's process has
threads (the progress display) whose locks a fork copies in whatever state they are in; not
multiprocessing's spawn, which runs the parent's main script again in each child and so breaks
any script that calls the source without an `if __name__ == "__main__"` guard. The workers
parse ahead of the run by at most a few MiB (`Workers`), so memory stays flat as a corpus grows.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from bashgym.contracts import RunContext
from bashgym.records import Trace

AUTO_MIN_BYTES = 64 << 20  # below this a corpus is parsed in the run's process (spawning costs)
AUTO_MAX_WORKERS = 2  # one parses about as fast as the run's process scrubs and writes: see below
PROTOCOL = pickle.HIGHEST_PROTOCOL
WORKER = "bashgym_sources_claude_code._worker"  # the module a worker runs
AHEAD = 32  # jobs queued per worker (a job is a few hundred bytes: its pipe never fills)
BUFFERED = 4 << 20  # bytes of answers held per worker, not yet taken
COUNTS_EVERY = 1.0  # seconds between the sums of what the source counted (`Counts`)


def cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def auto_workers(root: Path) -> int:
    """Worker processes for a corpus of AUTO_MIN_BYTES or more: one per CPU beside the run's own
    process, at most AUTO_MAX_WORKERS; else 0 (the run's process parses: starting a worker costs
    about 0.3 s of CPU, its imports). Why not one per CPU: the run's process scrubs and writes
    what the workers parse, which takes it about as long as one worker takes to parse (2.3 vs 2.0
    s of CPU for a 250 MB corpus, measured), so on 2 CPUs a second worker only competed with it
    for the cores: 1 worker was faster than 2 there, and held ~45 MiB less (loaded box)."""
    n = min(cpus() - 1, AUTO_MAX_WORKERS)
    if n < 1:
        return 0
    total = 0
    for path in [root] if root.is_file() else root.rglob("*.jsonl"):
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= AUTO_MIN_BYTES:
            return n
    return 0


class Recorder:
    """Stands in for the RunContext (and the bad-lines report) where a session's effects must
    wait their turn: records what is counted, noted and reported, for `replay`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def count(self, what: str, n: int = 1) -> None:
        self.calls.append(("count", (what, n)))

    def note(self, text: str) -> None:
        self.calls.append(("note", (text,)))

    def note_once(self, key: str, text: str) -> None:
        self.calls.append(("note_once", (key, text)))

    def bad(self, file: str, line: int, reason: str) -> None:
        self.calls.append(("bad", (file, line, reason)))


class Counts:
    """Stands in for the RunContext while the source reads: sums what is counted and hands the
    sums to the run together, at most once a second and when the source ends; notes and drops
    go to the run at once. Why: each count was an event of its own, written and flushed to
    events.jsonl and given to every subscriber (8,000 for a 250 MB corpus: ~0.3 s of the run's
    process, measured); the totals in run.json are the same."""

    def __init__(self, run: RunContext) -> None:
        self.run, self.every = run, COUNTS_EVERY
        self.pending: Counter[str] = Counter()
        self.last = time.monotonic()
        self.noted: set[str] = set()

    def count(self, what: str, n: int = 1) -> None:
        self.pending[what] += n  # (a count of 0 is still said: run.json shows the key)

    def note(self, text: str) -> None:
        self.run.note(text)

    def note_once(self, key: str, text: str) -> None:
        """`text`, unless a note was made for `key` already (the same unknown kind of thing
        in every session would otherwise fill the notes)."""
        if key not in self.noted:
            self.noted.add(key)
            self.run.note(text)

    def drop(self, reason: str, n: int = 1, *, by: str = "", row_id: str | None = None) -> None:
        self.run.drop(reason, n, by=by, row_id=row_id)

    def flush(self, due: bool = False) -> None:
        """Hand the sums to the run (with `due`: only when `every` seconds have passed)."""
        if due and time.monotonic() - self.last < self.every:
            return
        pending, self.pending, self.last = self.pending, Counter(), time.monotonic()
        for what, n in pending.items():
            self.run.count(what, n)


def replay(calls: list[tuple[str, tuple[Any, ...]]], run: Any, bad: Any) -> None:
    for name, args in calls:
        if name == "bad":
            bad(*args)
        else:
            getattr(run, name)(*args)


def _parse(path: str, slug: str, options: Any) -> tuple[dict[str, Any] | None, list[Any]]:
    """In a worker: one session (its subagents attached, the filters applied), as its fields."""
    from bashgym_sources_claude_code.source import _Filters, parse_session

    recorder = Recorder()
    trace = parse_session(Path(path), slug, {}, _Filters(options), options, recorder, recorder.bad)
    fields = trace.model_dump(exclude_defaults=True) if trace is not None else None
    return fields, recorder.calls


class Workers:
    """Worker processes parsing sessions; job i goes to worker i mod n, and as each worker does
    its jobs in order, taking the answers job by job gives them back in submission order.

    A thread per worker reads its answers as they come (a pipe holds 64 KiB: a worker whose
    answer is not read stops), so the workers parse ahead while this process scrubs and writes
    a batch; each thread holds at most BUFFERED bytes of answers not taken yet (at least one),
    and at most AHEAD jobs per worker are queued, so memory stays flat and no pipe fills up."""

    def __init__(self, n: int, options: Any, run: Any, bad: Any) -> None:
        self.options, self.run, self.bad = options, run, bad
        # the child imports what this process imports (a test's or a plugin dir's sys.path)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        command = [sys.executable, "-m", WORKER]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        self.procs = [subprocess.Popen(command, env=env, **pipes) for _ in range(n)]
        self.sent = self.received = 0
        self.queue: deque[int | list[Any]] = deque()  # the worker of each job, in order
        self.answers: list[deque[bytes | None]] = [deque() for _ in self.procs]
        self.held = [0] * n  # bytes each worker's thread holds
        self.ready = threading.Condition()
        self.readers = [
            threading.Thread(target=self._read, args=(i,), daemon=True) for i in range(n)
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, i: int) -> None:
        """Worker i's answers, framed (8-byte length, then the pickle), into `answers[i]`."""
        out = self.procs[i].stdout
        assert out is not None
        while True:
            head = out.read(8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
            data = out.read(size) if size >= 0 else b""
            with self.ready:
                if len(data) != size:  # the worker ended (mid-answer: it was stopped)
                    self.answers[i].append(None)  # the worker ended
                    self.ready.notify_all()
                    return
                while self.held[i] and self.held[i] + len(data) > BUFFERED:
                    self.ready.wait()
                self.answers[i].append(data)
                self.held[i] += len(data)
                self.ready.notify_all()

    def submit(self, path: Path, slug: str) -> Iterator[Trace]:
        """Queue one session; yield the Traces of the sessions done in order, waiting while too
        many are in flight."""
        while self.sent - self.received >= AHEAD * len(self.procs):
            yield from self._next()
        i = self.sent % len(self.procs)
        job = self.procs[i].stdin
        try:
            pickle.dump((str(path), slug, self.options), job, protocol=PROTOCOL)  # type: ignore[arg-type]
            job.flush()  # type: ignore[union-attr]
        except OSError:  # its end of the pipe is closed
            self._ended(i)
        self.sent += 1
        self.queue.append(i)
        while self.queue and self._done(self.queue[0]):
            yield from self._next()

    def _done(self, entry: int | list[Any]) -> bool:
        return isinstance(entry, list) or bool(self.answers[entry])

    def skipped(self, recorder: Recorder) -> None:
        """A file left out before parsing: what it counts, in its turn among the sessions."""
        self.queue.append(recorder.calls)

    def drain(self) -> Iterator[Trace]:
        """Every session still in flight, in order."""
        while self.queue:
            yield from self._next()

    def _next(self) -> Iterator[Trace]:
        entry = self.queue.popleft()
        if isinstance(entry, list):
            replay(entry, self.run, self.bad)
            return
        with self.ready:
            while not self.answers[entry]:
                self.ready.wait()
            data = self.answers[entry].popleft()
            if data is not None:
                self.held[entry] -= len(data)
                self.ready.notify_all()
        if data is None:
            self._ended(entry)
        fields, calls = pickle.loads(data)
        self.received += 1
        replay(calls, self.run, self.bad)
        if fields is not None:
            yield Trace.model_validate(fields)

    def _ended(self, i: int) -> NoReturn:
        code = self.procs[i].wait()
        raise RuntimeError(f"claude-code: a parsing worker ended (exit {code}); its error is above")

    def close(self) -> None:
        """Stop: idle workers end at the end of their input, busy ones are stopped."""
        for proc in self.procs:
            if self.received < self.sent:
                proc.kill()
            with contextlib.suppress(OSError):  # (a killed worker's pipe is broken)
                proc.stdin.close()  # type: ignore[union-attr]
        with self.ready:  # a reader waiting for room takes its worker's end instead
            self.held = [0] * len(self.procs)
            self.ready.notify_all()
        for proc, reader in zip(self.procs, self.readers, strict=True):
            proc.wait()
            reader.join()
            proc.stdout.close()  # type: ignore[union-attr]


def _write_all(fd: int, data: memoryview) -> None:
    """All of `data` to `fd`, on the pipe's file descriptor itself (`os.write` may write less
    than it is given: the loop goes on from there). Not through `sys.stdout.buffer`: with the
    worker stopped and continued (Ctrl-Z, a profiler) its buffered writer sent answers the run
    could not read (seen: a 250 MB run failed on an unpicklable answer after SIGSTOP/SIGCONT to
    its worker; with this, hundreds of stops pass)."""
    while data:
        data = data[os.write(fd, data) :]


def serve() -> None:
    """A worker's loop: a job in from stdin, its answer out to stdout, until stdin ends."""
    jobs, answers = sys.stdin.buffer, sys.stdout.fileno()
    sys.stdout = sys.stderr  # a stray print must not land among the answers
    # Ctrl-C reaches the whole process group: the run stops its workers itself (`close`), so
    # each need not print a traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        out = io.BytesIO()
        out.write(bytes(8))  # the frame's length, filled in below
        pickle.dump(_parse(*job), out, protocol=PROTOCOL)
        frame = out.getbuffer()
        frame[:8] = (len(frame) - 8).to_bytes(8, "little")
        _write_all(answers, frame)
        del frame
