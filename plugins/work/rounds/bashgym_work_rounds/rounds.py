"""Generation in rounds: a runner (or the run backend) makes each round's rows, this finalizes
and judges them, and with `top_up` asks for more rounds — each sized by the pass rate so far and
continuing through the seed rows — until `num_records` rows pass, `max_rounds`, or a round keeps
nothing. The runner never calls back into the engine; run.json's `rounds` says what each did.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bashgym.contracts import Generated, RunContext
from bashgym.events import RowsGenerated

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bashgym.runspec import ResolvedRun

DEFAULT_NUM_RECORDS = 10
MAX_ROUND_FACTOR = 10  # a top-up round asks for at most 10x the rows still missing


def requested_records(resolved: ResolvedRun, seed: pd.DataFrame | None) -> int:
    """The pipeline's `num_records`, else one row per seed row, else 10; a run with no pipeline
    sends its seed rows through one for one (capped at -n)."""
    rows = len(seed) if seed is not None else 0
    if resolved.pipeline is None:
        return min(rows, resolved.spec.num_records or rows) or DEFAULT_NUM_RECORDS
    return getattr(resolved.pipeline.options, "num_records", None) or rows or DEFAULT_NUM_RECORDS


def next_round_size(target: int, kept: int, asked: int) -> int:
    missing = target - kept
    rate = kept / asked if asked else 0.0
    factor = min(1 / rate, MAX_ROUND_FACTOR) if rate > 0 else MAX_ROUND_FACTOR
    return max(missing, math.ceil(missing * factor))


def rotated(seed: pd.DataFrame, offset: int) -> pd.DataFrame:
    """The seed starting at row `offset` (wrapping): a top-up round continues through the seed
    rows instead of asking for the first ones again."""
    import pandas as pd

    offset %= len(seed)
    return pd.concat([seed.iloc[offset:], seed.iloc[:offset]], ignore_index=True)


def generate_in_rounds(
    generate: Callable[..., Generated], resolved: ResolvedRun, seed: pd.DataFrame | None,
    run: RunContext, judge: Callable[[pd.DataFrame], pd.DataFrame], *, resume: bool,
) -> Generated:  # fmt: skip
    """Every round of the run's pipeline (None: its seed rows, for the judges' columns), made by
    `generate` (the runner's, or the run backend's for it), finalized and judged with `judge`;
    counts requested, generated and rounds. `generated` is what the pipeline produced: its rows
    after `finalize` (which may drop rows, or make several of one), the rows the judges, a
    top-up's surplus and the sinks then take from, so kept + what they drop = generated."""
    import pandas as pd

    spec, pipeline = resolved.spec, resolved.pipeline
    target = size = requested_records(resolved, seed)
    kept, dropped, rounds, summary = [], [], [], {}  # type: ignore[var-annotated]
    asked = passed = 0
    run.emit(RowsGenerated(step="pipeline", n=0, total=size))
    for number in range(1, (spec.max_rounds if spec.top_up else 1) + 1):
        part = rotated(seed, asked) if seed is not None and len(seed) else seed
        try:
            out = generate(pipeline, resolved.judges, part, size, run, round=number, resume=resume)
        except BaseException:  # a stopped model (the runner counted its round's rows) or a
            _count(run, target, rounds)  # Ctrl-C: what was asked and the finished rounds
            raise
        summary.update(out.summary)
        dropped.extend(out.dropped)
        rows = out.dataset
        if pipeline is not None:
            rows = pipeline.obj.finalize(rows, pipeline.options, run)
        kept.append(judged := judge(rows))
        passed, asked = passed + len(judged), asked + size
        summary.pop("generated", None)  # the runner's rows before its filters and `finalize`
        resumed = summary.pop("resumed_rows", 0)
        rounds.append(
            dict(requested=size, generated=len(rows), kept=len(judged), resumed_rows=resumed)
        )
        if passed >= target or not spec.top_up:
            break
        if not len(judged):
            run.note(f"top-up stopped after round {number}: it kept no rows")
            break
        size = next_round_size(target, passed, asked)
        run.emit(RowsGenerated(step="pipeline", n=0, total=asked + size))
    else:
        if spec.top_up and passed < target:
            run.note(f"top-up stopped after {number} rounds with {passed} of {target} rows")
    dataset = pd.concat(kept, ignore_index=True)
    if spec.top_up and len(dataset) > target:
        run.count("top_up_surplus", len(dataset) - target)  # passed, but more than asked for
        dataset = dataset.head(target)
    _count(run, target, rounds)
    if len(rounds) > 1:
        run.count("rounds", len(rounds))
    return Generated(dataset, dropped, {"rounds": rounds, **summary})


def _count(run: RunContext, target: int, rounds: list[dict[str, int]]) -> None:
    run.count("requested", target)
    if rounds:
        run.count("generated", sum(r["generated"] for r in rounds))
