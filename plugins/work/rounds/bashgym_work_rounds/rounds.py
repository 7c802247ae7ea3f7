"""Generation in rounds: a runner (or the run backend) makes each round's rows, this finalizes
and judges them, and with `top_up` asks for more rounds — each sized by the pass rate so far and
continuing through the seed rows — until `num_records` rows pass, `max_rounds`, a round keeps
nothing, or the pipeline counts rows it had no more to make of (`fewer_than_asked`). The runner
never calls back into the engine; run.json's `rounds` says what each did.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING

from bashgym.contracts import Generated, RunContext
from bashgym.events import RowsGenerated

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bashgym.records import DroppedRow
    from bashgym.runspec import ResolvedRun

DEFAULT_NUM_RECORDS = 10
MAX_ROUND_FACTOR = 10  # a top-up round asks for at most 10x the rows still missing
# run.json's count (any pipeline's) of the rows asked that, besides its drops, gave no row: it
# had no more to make (code-graph-pairs: a graph's triplets), so another round cannot make more
FEWER = "fewer_than_asked"


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
        fewer_before = run.counts.get(FEWER, 0)
        try:
            out = generate(pipeline, resolved.judges, part, size, run, round=number, resume=resume)
        except BaseException as exc:  # a stopped model (the runner counted its round's rows)
            _count(run, target, rounds, stopped=size)  # or Ctrl-C: what was asked, this round
            hand_back(exc, dropped)  # too; the finished rounds' drops go with the exception
            raise
        summary.update(out.summary)
        dropped.extend(out.dropped)
        rows = out.dataset
        if pipeline is not None:
            rows = pipeline.obj.finalize(rows, pipeline.options, run)
        kept.append(judged := judge(rows))
        passed, asked = passed + len(judged), asked + size
        # bashgym 0.1's runners returned `generated` (their rows before their filters): not
        # run.json's, which counts the rows after `finalize` (a third party's may still send it)
        summary.pop("generated", None)
        resumed = summary.pop("resumed_rows", 0)
        rounds.append(
            dict(requested=size, generated=len(rows), kept=len(judged), resumed_rows=resumed)
        )
        if passed >= target or not spec.top_up:
            break
        if (fewer := run.counts.get(FEWER, 0) - fewer_before) > 0:
            run.note(
                f"top-up stopped after round {number}: the pipeline had no more rows to make "
                f"({fewer} fewer than asked)"
            )
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
    return Generated(dataset, dropped, {"rounds": rounds, **summary})


def _count(run: RunContext, target: int, rounds: list[dict[str, int]], stopped: int = 0) -> None:
    """requested (the rows wanted), generated (the finished rounds' rows after `finalize`) and,
    for more than one round, `rounds` and the rows asked in all (`requested_in_rounds`), a
    round the run stopped in (`stopped`: its size) among them: a failed run has no `rounds`
    list in run.json, and a top-up's rows asked are more than those wanted."""
    run.count("requested", target)
    if rounds:
        run.count("generated", sum(r["generated"] for r in rounds))
    if len(rounds) + bool(stopped) > 1:
        run.count("rounds", len(rounds) + bool(stopped))
        run.count("requested_in_rounds", sum(r["requested"] for r in rounds) + stopped)


def hand_back(exc: BaseException, dropped: list[DroppedRow]) -> None:
    """The rows the runner dropped in the finished rounds (`dropped`), on the exception that
    stopped the run, before those of the round it stopped in (a runner may have put them on
    its exception as `dropped`), for the engine to write to a failed run's dropped.jsonl."""
    with contextlib.suppress(AttributeError, TypeError):  # one that takes no attribute
        exc.dropped = [*dropped, *getattr(exc, "dropped", ())]  # type: ignore[attr-defined]
