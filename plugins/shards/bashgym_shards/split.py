"""A generation round in shards: split on the driver, merged back in seed order (any backend
that runs shards elsewhere: the ray and processes backends).

The runners sample seed rows in order (row i of a round uses seed row i, wrapping), so rows
[start, stop) of a round are what a runner makes from the seed rotated to `start`: each shard
gets only those seed rows and makes the same rows the whole round would have made there.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from bashgym.contracts import Generated, RunContext
from bashgym.events import Note
from bashgym_shards.worker import Outcome, Shard, StepRef

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import Step

SUMMED = ("resumed_rows",)  # runner summary keys that count rows: added up


def plan(n: int, shards: int) -> list[tuple[int, int]]:
    """`n` rows as at most `shards` contiguous ranges, sizes within one of each other."""
    shards = max(1, min(shards, n))
    base, extra = divmod(n, shards)
    ranges, start = [], 0
    for i in range(shards):
        stop = start + base + (1 if i < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


def seed_rows(seed: pd.DataFrame | None, start: int, stop: int) -> pd.DataFrame | None:
    """The seed rows rows [start, stop) of a round use, in order (wrapping past the end)."""
    if seed is None or not len(seed):
        return seed
    size = len(seed)
    picks = [(start + i) % size for i in range(min(stop - start, size))]
    return seed.iloc[picks].reset_index(drop=True)


def shards(
    runner: str, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None, n: int,
    count: int, *, round: int, resume: bool,
) -> list[Shard]:  # fmt: skip
    """Round `round`'s `n` rows as (at most) `count` shards, each with its seed rows."""
    step = pipeline and StepRef.of(pipeline)
    refs = tuple(StepRef.of(j) for j in judges)
    return [
        Shard(i, start, stop, round, resume, runner, step, refs, seed_rows(seed, start, stop))
        for i, (start, stop) in enumerate(plan(n, count))
    ]


def replay(out: Outcome, run: RunContext, notes: set[str]) -> None:
    """A worker's events on the driver's run, in the order it emitted them (a note several
    shards made, once: `notes` holds those of the round so far)."""
    for event in out.events:
        if isinstance(event, Note):
            if event.text in notes:
                continue
            notes.add(event.text)
        run.emit(event)


def merge(parts: list[Generated]) -> Generated:
    """The shards' rows in order, every dropped row, row counts added up (other summary keys:
    the first shard's, e.g. the runner's buffer size)."""
    import pandas as pd

    dataset = pd.concat([p.dataset for p in parts], ignore_index=True)
    summary: dict[str, Any] = {}
    for part in parts:
        for key, value in part.summary.items():
            if key in SUMMED:
                summary[key] = summary.get(key, 0) + value
            else:
                summary.setdefault(key, value)
    return Generated(dataset, [d for p in parts for d in p.dropped], summary)


def hand_back(exc: BaseException, done: dict[int, Outcome]) -> BaseException:
    """`exc` carrying every shard's dropped rows in seed order (`dropped`): the finished
    shards' and each failed one's (a stopped runner puts its own on its exception), then those
    `exc` held if it is no shard's; the run raises only one shard's error, and the engine
    writes these to the failed run's dropped.jsonl, as the replayed events counted them."""
    rows: list[Any] = []
    for _, out in sorted(done.items()):
        held = out.value.dropped if out.error is None else getattr(out.error, "dropped", None)
        rows += held or []
    if not any(out.error is exc for out in done.values()):
        rows += getattr(exc, "dropped", None) or []
    with contextlib.suppress(AttributeError, TypeError):  # one that takes no attribute
        exc.dropped = rows  # type: ignore[attr-defined]
    return exc
