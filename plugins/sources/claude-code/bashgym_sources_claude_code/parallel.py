"""Sessions parsed in worker processes, handed back in order.

Why: parsing is most of the source's time and one core does it at 100-150 MB/s, while a run
from transcripts to training lines also scrubs and writes in the same process. On a machine
with more than one CPU, workers parse the sessions (each with its subagents) and the run's
process only loads the finished Traces. They cross the process boundary as pickles of the
models' own fields (`_pickle`): pickle's default for a pydantic model took longer to load than
the transcript took to parse, and JSON text would have to be validated again (as long, too).
What a session's parse tells the run (counts, bad lines) is recorded in the worker and replayed
in the run's process in the order the sessions come, so run.json says exactly what a parse in
one process says.

Workers are plain child processes of this interpreter (`_worker.py`), fed jobs and answering
with pickles over their stdin and stdout: not forked, because the run's process has
threads (the progress display) whose locks a fork copies in whatever state they are in; not
multiprocessing's spawn, which runs the parent's main script again in each child and so breaks
any script that calls the source without an `if __name__ == "__main__"` guard. At most
`2 x workers` sessions are in flight, so memory holds a few sessions however large the corpus.
"""

from __future__ import annotations

import contextlib
import copyreg
import os
import pickle
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bashgym.contracts import RunContext
from bashgym.records import Message, Outcome, Provenance, Timing, ToolCall, ToolSchema, Trace, Usage

AUTO_MIN_BYTES = 64 << 20  # below this a corpus is parsed in the run's process (spawning costs)
AUTO_MAX_WORKERS = 4
PROTOCOL = pickle.HIGHEST_PROTOCOL
WORKER = "bashgym_sources_claude_code._worker"  # the module a worker runs


def cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def auto_workers(root: Path) -> int:
    """One worker per CPU (at most AUTO_MAX_WORKERS) for a corpus of AUTO_MIN_BYTES or more,
    else none: starting a worker costs about a third of a second (its imports)."""
    n = min(cpus(), AUTO_MAX_WORKERS)
    if n < 2:
        return 1
    total = 0
    for path in [root] if root.is_file() else root.rglob("*.jsonl"):
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= AUTO_MIN_BYTES:
            return n
    return 1


class Recorder:
    """Stands in for the RunContext (and the bad-lines report) where a session's effects must
    wait their turn: records what is counted, noted and reported, for `replay`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def count(self, what: str, n: int = 1) -> None:
        self.calls.append(("count", (what, n)))

    def note(self, text: str) -> None:
        self.calls.append(("note", (text,)))

    def bad(self, file: str, line: int, reason: str) -> None:
        self.calls.append(("bad", (file, line, reason)))


def replay(calls: list[tuple[str, tuple[Any, ...]]], run: RunContext, bad: Any) -> None:
    for name, args in calls:
        if name == "bad":
            bad(*args)
        else:
            getattr(run, name)(*args)


def _parse(path: str, slug: str, options: Any) -> tuple[Trace | None, list[Any]]:
    """In a worker: one session (its subagents attached, the filters applied)."""
    from bashgym_sources_claude_code.source import _Filters, parse_session

    recorder = Recorder()
    trace = parse_session(Path(path), slug, {}, _Filters(options), options, recorder, recorder.bad)
    return trace, recorder.calls


_new, _set = object.__new__, object.__setattr__


def _model(cls: type[Any], fields: dict[str, Any], fields_set: set[str]) -> Any:
    """A record model from its pickled fields, as it was (they were valid when pickled)."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    _set(obj, "__pydantic_fields_set__", fields_set)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def _reduce(obj: Any) -> tuple[Any, ...]:
    return _model, (type(obj), obj.__dict__, obj.__pydantic_fields_set__)


# the record models a Trace holds (no extra fields, no private attributes: `_model` is exact)
_RECORDS = (Trace, Message, ToolCall, ToolSchema, Usage, Timing, Outcome, Provenance)
_DISPATCH = {**copyreg.dispatch_table, **dict.fromkeys(_RECORDS, _reduce)}


def _pickle(value: Any, out: IO[bytes]) -> None:
    pickler = pickle.Pickler(out, protocol=PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(value)


class Workers:
    """Worker processes parsing sessions; job i goes to worker i mod n, and as each worker does
    its jobs in order, reading the answers job by job gives them back in submission order."""

    def __init__(self, n: int, options: Any, run: RunContext, bad: Any) -> None:
        self.options, self.run, self.bad = options, run, bad
        # the child imports what this process imports (a test's or a plugin dir's sys.path)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        command = [sys.executable, "-m", WORKER]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        self.procs = [subprocess.Popen(command, env=env, **pipes) for _ in range(n)]
        self.sent = self.received = 0
        self.queue: deque[subprocess.Popen[bytes] | list[Any]] = deque()  # in order

    def submit(self, path: Path, slug: str) -> Iterator[Trace]:
        """Queue one session; yield the Traces of the sessions done in order, waiting while too
        many are in flight."""
        proc = self.procs[self.sent % len(self.procs)]
        pickle.dump((str(path), slug, self.options), proc.stdin, protocol=PROTOCOL)  # type: ignore[arg-type]
        proc.stdin.flush()  # type: ignore[union-attr]
        self.sent += 1
        self.queue.append(proc)
        while self.sent - self.received > 2 * len(self.procs):
            yield from self._next()

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
        try:
            trace, calls = pickle.load(entry.stdout)  # type: ignore[arg-type]
        except EOFError:
            raise RuntimeError(
                f"claude-code: a parsing worker ended (exit {entry.wait()}); see its error above"
            ) from None
        self.received += 1
        replay(calls, self.run, self.bad)
        if trace is not None:
            yield trace

    def close(self) -> None:
        """Stop: idle workers end at the end of their input, busy ones are stopped."""
        for proc in self.procs:
            if self.received < self.sent:
                proc.kill()
            with contextlib.suppress(OSError):  # (a killed worker's pipe is broken)
                proc.stdin.close()  # type: ignore[union-attr]
        for proc in self.procs:
            proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]


def serve() -> None:
    """A worker's loop: a job in from stdin, its answer out to stdout, until stdin ends."""
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not land among the answers
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        _pickle(_parse(*job), answers)
        answers.flush()
