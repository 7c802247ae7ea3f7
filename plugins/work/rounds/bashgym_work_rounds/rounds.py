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
# run.json's count (the datadesigner runner's too) of the rows made in a round the run stopped in
# before its finalize and judges: neither `generated` nor dropped; the same command resumes them
STOPPED_ROWS = "stopped_round_rows"


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
    top-up's surplus and the sinks then take from, so kept + what they drop = generated.
    A round stopped anywhere (its runner, finalize, a judge, Ctrl-C) still counts what it
    asked: the rows its runner made as `stopped_round_rows` (less those its finalize dropped),
    or, when the runner stopped counting none of them (Ctrl-C, or an error in a later round:
    round 1's is most often bad input), as pending (the same command resumes the round);
    every drop so far goes back on the exception.
    `finalize` may return a `Generated`: the rows it dropped follow the runner's of the round."""
    import pandas as pd

    spec, pipeline = resolved.spec, resolved.pipeline
    target = size = requested_records(resolved, seed)
    kept, dropped, rounds, summary = [], [], [], {}  # type: ignore[var-annotated]
    asked = passed = number = accounted = 0
    made: Generated | None = None  # the round under way's rows, once its runner returned them
    left: list[DroppedRow] = []  # the rows its finalize dropped, once it returned
    run.emit(RowsGenerated(step="pipeline", n=0, total=size))
    try:  # a round stopped anywhere (its runner, finalize, a judge, Ctrl-C) records what it asked
        for number in range(1, (spec.max_rounds if spec.top_up else 1) + 1):
            made, left, accounted = None, [], _accounted(run)
            part = rotated(seed, asked) if seed is not None and len(seed) else seed
            fewer_before = run.counts.get(FEWER, 0)
            made = generate(pipeline, resolved.judges, part, size, run, round=number, resume=resume)
            rows = made.dataset
            if pipeline is not None:  # the rows it dropped go after the runner's of the round
                rows, left = finalized(pipeline.obj.finalize(rows, pipeline.options, run))
                made = Generated(made.dataset, [*made.dropped, *left], made.summary)
            kept.append(judged := judge(rows))
            summary.update(made.summary)
            passed, asked = passed + len(judged), asked + size
            # bashgym 0.1's runners returned `generated` (their rows before their filters): not
            # run.json's, which counts the rows after `finalize` (a third party's may still send it)
            summary.pop("generated", None)
            resumed = summary.pop("resumed_rows", 0)
            dropped.extend(made.dropped)  # the round is finished from here on
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
    except BaseException as exc:
        if (stopped := size if number > len(rounds) else 0) and made is not None:
            # made, never judged: those its finalize dropped are counted (and listed) as drops
            run.count(STOPPED_ROWS, max(len(made.dataset) - len(left), 0))
            dropped.extend(made.dropped)  # the runner's of this round, then its finalize's
        elif (
            stopped
            and _accounted(run) == accounted
            and (number > 1 or isinstance(exc, KeyboardInterrupt))
        ):  # the runner counted none of its rows: Ctrl-C, or a later round's error (its
            run.count("pending", size)  # finished batches are on disk: the same command resumes)
        _count(run, target, rounds, stopped=stopped)
        hand_back(exc, dropped)  # the finished rounds' drops go with the exception
        raise
    _count(run, target, rounds)
    return Generated(dataset, dropped, {"rounds": rounds, **summary})


def finalized(out: pd.DataFrame | Generated) -> tuple[pd.DataFrame, list[DroppedRow]]:
    """A pipeline's `finalize` result: its rows, and the rows it handed back as dropped (a
    plain DataFrame hands back none; its drops are only counted)."""
    if isinstance(out, Generated):
        return out.dataset, list(out.dropped)
    return out, []


def _accounted(run: RunContext) -> int:
    """The rows a runner counted as made in a round it stopped in, or pending."""
    return run.counts.get(STOPPED_ROWS, 0) + run.counts.get("pending", 0)


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
