"""The worker processes of one run: a stdlib `ProcessPoolExecutor` on a spawn context.

Why the standard library's pool: it already starts, feeds and reaps worker processes, and when
one dies it fails every pending future with `BrokenProcessPool` and stops the others (no hang),
which is what a dead worker must do to a round here. Why spawn, not fork or forkserver: fork
copies a driver that runs threads (the progress display, DataDesigner's) and can deadlock in a
lock one of them held; forkserver's server process starts once per driver process and keeps the
environment of that moment, so a later run's env (where model keys live,
`BASHGYM_LOAD_PLUGINS`) would not reach its workers. Spawn starts each worker from the driver's
environment as it is when the run opens.

Each worker loads the run's plugins and builds its scrubbing once, in the pool's initializer,
all workers in parallel and while the driver goes on with its own start-up (`Pool` asks for
every worker at once). A worker whose set-up failed says why in each shard it is given, instead
of dying: a dead worker is only ever a crash, a kill or the OOM killer.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import Future, ProcessPoolExecutor

from bashgym_shards import worker
from bashgym_shards.worker import Blueprint, Outcome, Shard

_SETUP_ERROR: BaseException | None = None  # in a worker: why its set-up failed, if it did


def _set_up(bp: Blueprint) -> None:
    """The pool's initializer, in each worker: the run's plugins loaded, scrubbing built (no
    model client: shards use DataDesigner's own)."""
    global _SETUP_ERROR
    try:
        worker.warm(bp, model_client=False)
    except Exception as exc:  # noqa: BLE001 -- said by each shard this worker is given
        _SETUP_ERROR = exc


def _run_shard(bp: Blueprint, part: Shard) -> Outcome:
    """One shard in this worker (`bashgym_shards.worker.shard`), or why it cannot run here."""
    if _SETUP_ERROR is not None:
        why = f"{type(_SETUP_ERROR).__name__}: {_SETUP_ERROR}"
        return Outcome(error=RuntimeError(f"a worker could not load the run's plugins: {why}"))
    return worker.shard(bp, part)


class Pool:
    """`workers` spawned processes (at least one) with `bp`'s plugins loaded, each running
    one shard at a time."""

    def __init__(self, workers: int, bp: Blueprint) -> None:
        self.workers, self.bp = workers, bp
        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_set_up,
            initargs=(bp,),
        )
        # Start every worker now: the pool spawns one per task submitted while none is idle.
        for _ in range(workers):
            self.executor.submit(os.getpid)

    def submit(self, part: Shard) -> Future[Outcome]:
        return self.executor.submit(_run_shard, self.bp, part)

    def exit_codes(self, wait_s: float = 2.0) -> list[int]:
        """Exit codes of the workers that died (not those the pool stopped after them), once the
        pool's own thread has reaped them (it may win the race to `waitpid`, so this waits up to
        `wait_s`). Informative: read from the executor's private process table, so an empty
        list should Python change it."""
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        deadline = time.monotonic() + wait_s
        while any(p.exitcode is None for p in processes) and time.monotonic() < deadline:
            time.sleep(0.02)
        codes = [p.exitcode for p in processes]
        return [c for c in codes if c is not None and c not in (0, -signal.SIGTERM)]

    def close(self) -> None:
        """Stop the workers at once, when the run needs them no more: every shard they were
        given came back (they hold nothing unsaved), or the run failed or was interrupted.
        Not a graceful shutdown: a worker's interpreter teardown (DataDesigner's modules and
        threads) took ~0.5 s, which the user would wait for at the end of every run."""
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # Python 3.14's terminate_workers(), by hand before it
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)


def died(exit_codes: list[int]) -> str:
    """How the workers died, in words (`killed by SIGKILL`, `exit code 3`)."""
    words = []
    for code in exit_codes:
        if code < 0:
            try:
                words.append(f"killed by {signal.Signals(-code).name}")
            except ValueError:
                words.append(f"killed by signal {-code}")
        else:
            words.append(f"exit code {code}")
    return ", ".join(dict.fromkeys(words)) or "it ended abruptly"
