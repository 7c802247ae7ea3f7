"""Sessions parsed by worker processes give what one process gives: the same Traces in the
same order, the same counts, notes and drops, `limit` honoured, and a broken worker is an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bashgym_sources_claude_code import parallel, source
from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

from bashgym.contracts import RunContext
from bashgym.records import trace_to_row
from bashgym.settings import Settings

TODO = "-home-dev-todo-api"
PARENT = "c3d9e2f1-5a7b-4c8d-9e0f-1a2b3c4d5e6f"
AGENT = "a7e3f09b2c41d586e"


def _read(tmp_path: Path, name: str, **options: object) -> tuple[list, RunContext]:
    run = RunContext(run_dir=tmp_path / name, settings=Settings())
    return list(ClaudeCodeSource().open(ClaudeCodeOptions(**options), run)), run  # type: ignore[arg-type]


def _corpus(fixtures: Path, tmp_path: Path) -> Path:
    """Every fixture layout in one tree, a bad line and a file that is no transcript included,
    and a folder of Claude Code 2.0.x (its subagents beside the sessions: parsed here)."""
    root = tmp_path / "corpus"
    shutil.copytree(fixtures / "projects", root)
    for shape in (fixtures / "shapes").iterdir():
        for project in shape.iterdir():
            shutil.copytree(project, root / f"{shape.name}{project.name}")
    broken = root / TODO / "4f7c2a10-8d3e-4b6a-9c1f-2e5d7a9b0c11.jsonl"
    broken.write_text(broken.read_text() + "{not json\n")
    (root / TODO / "notes.jsonl").write_text("a,b\n1,2\n")
    legacy = root / "-home-dev-legacy"
    legacy.mkdir()
    shutil.copy(fixtures / "projects" / TODO / f"{PARENT}.jsonl", legacy)
    agent = fixtures / "projects" / TODO / PARENT / "subagents" / f"agent-{AGENT}.jsonl"
    shutil.copy(agent, legacy / f"agent-{AGENT}.jsonl")
    return root


def test_workers_give_what_one_process_gives(fixtures, tmp_path):
    root = _corpus(fixtures, tmp_path)
    here, run1 = _read(tmp_path, "one", path=str(root), workers=1)
    there, run3 = _read(tmp_path, "three", path=str(root), workers=3)
    assert len(here) > 8
    assert [trace_to_row(t) for t in there] == [trace_to_row(t) for t in here]
    assert there == here  # the models themselves, subagents included
    assert run3.counts == run1.counts and run3.counts["source.bad_lines"] == 1
    assert run3.notes == run1.notes and run3.dropped == run1.dropped


@pytest.mark.parametrize("limit", [1, 4])
def test_limit_with_workers(fixtures, tmp_path, limit):
    root = _corpus(fixtures, tmp_path)
    here, run1 = _read(tmp_path, "one", path=str(root), workers=1, limit=limit)
    there, run2 = _read(tmp_path, "two", path=str(root), workers=2, limit=limit)
    assert [t.id for t in there] == [t.id for t in here] and len(here) == limit
    assert run2.counts == run1.counts


def test_a_consumer_that_stops_early_stops_the_workers(fixtures, tmp_path):
    root = _corpus(fixtures, tmp_path)
    run = RunContext(run_dir=tmp_path, settings=Settings())
    stream = ClaudeCodeSource().open(ClaudeCodeOptions(path=str(root), workers=2), run)
    next(stream)
    stream.close()  # as the engine does when -n rows came


def test_auto_uses_workers_only_for_a_large_corpus(fixtures, tmp_path, monkeypatch):
    """Worker processes beside the run's own (which scrubs and writes what they parse): none
    for a small corpus or one CPU, one on 2 CPUs, at most AUTO_MAX_WORKERS."""
    monkeypatch.setattr(parallel, "cpus", lambda: 8)
    assert parallel.auto_workers(fixtures / "projects") == 0
    monkeypatch.setattr(parallel, "AUTO_MIN_BYTES", 1)
    assert parallel.auto_workers(fixtures / "projects") == parallel.AUTO_MAX_WORKERS == 2
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    assert parallel.auto_workers(fixtures / "projects") == 1
    monkeypatch.setattr(parallel, "cpus", lambda: 1)
    assert parallel.auto_workers(fixtures / "projects") == 0


def test_one_worker_process_gives_what_one_process_gives(fixtures, tmp_path, monkeypatch):
    """What auto picks on 2 CPUs: a single worker process (option `workers=1` is the run's own)."""
    root = _corpus(fixtures, tmp_path)
    here, run1 = _read(tmp_path, "one", path=str(root), workers=1)
    monkeypatch.setattr(source, "auto_workers", lambda root: 1)
    spawned: list[int] = []
    real = parallel.Workers.__init__

    def counting(self, n, *args):  # type: ignore[no-untyped-def]
        spawned.append(n)
        real(self, n, *args)

    monkeypatch.setattr(parallel.Workers, "__init__", counting)
    there, run2 = _read(tmp_path, "auto", path=str(root))
    assert spawned == [1]
    assert [trace_to_row(t) for t in there] == [trace_to_row(t) for t in here]
    assert run2.counts == run1.counts and run2.notes == run1.notes


def test_a_worker_that_dies_is_an_error(fixtures, tmp_path, monkeypatch):
    root = _corpus(fixtures, tmp_path)
    monkeypatch.setattr(parallel, "WORKER", "no_such_module_here")
    with pytest.raises(RuntimeError, match="parsing worker ended"):
        _read(tmp_path, "broken", path=str(root), workers=2)


@pytest.mark.parametrize("workers", [1, 2])
def test_counts_reach_the_run_in_sums(fixtures, tmp_path, workers, monkeypatch):
    """Each key once while the source reads (every count was an event written to events.jsonl),
    with the totals one event per count gives; nothing counted is left behind when it ends."""
    from bashgym.events import Counted

    monkeypatch.setattr(parallel, "COUNTS_EVERY", 600.0)
    root = _corpus(fixtures, tmp_path)
    run = RunContext(run_dir=tmp_path, settings=Settings())
    events: list[Counted] = []
    run.emit = lambda event: (events.append(event), run.tally(event))  # type: ignore[method-assign]
    traces = list(ClaudeCodeSource().open(ClaudeCodeOptions(path=str(root), workers=workers), run))
    counted = [e for e in events if isinstance(e, Counted)]
    assert len({e.what for e in counted}) == len(counted)  # one sum, at the end
    assert run.counts["source.traces"] == len(traces) and run.counts["source.files"] >= len(traces)
    assert run.counts["source.bad_lines"] == 1 and run.counts["source.not_transcripts"] == 1
    assert run.notes  # the bad line and the file that is no transcript, as they came


@pytest.mark.slow
def test_workers_stopped_and_continued_answer_intact(tmp_path):
    """Ctrl-Z and `fg` (or a profiler) stop and continue the workers mid-answer: every answer
    still arrives whole (their buffered stdout once sent ones the run could not read: this
    failed 2 of 3 times then)."""
    import os
    import signal
    import sys
    import threading
    import time

    sys.path.insert(0, str(Path(__file__).parents[4] / "bench"))
    from _claude_corpus import generate  # the bench's corpus: sessions of a realistic size

    root = tmp_path / "projects"
    generate(root, 20_000_000, seed=1)
    run = RunContext(run_dir=tmp_path, settings=Settings())
    done = threading.Event()
    spawned: list[int] = []
    real = parallel.Workers.__init__

    def recording(self, n, *args):  # type: ignore[no-untyped-def]
        real(self, n, *args)
        spawned.extend(p.pid for p in self.procs)

    def stop_and_continue() -> None:
        while not done.is_set():
            for pid in list(spawned):
                try:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(0.002)
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            time.sleep(0.003)

    parallel.Workers.__init__ = recording  # type: ignore[method-assign]
    pest = threading.Thread(target=stop_and_continue, daemon=True)
    pest.start()
    try:
        options = ClaudeCodeOptions(path=str(root), workers=2)
        traces = list(ClaudeCodeSource().open(options, run))
    finally:
        done.set()
        pest.join()
        parallel.Workers.__init__ = real  # type: ignore[method-assign]
    assert spawned and len(traces) == run.counts["source.traces"] > 10
