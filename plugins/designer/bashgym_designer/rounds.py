"""One round of a pipeline's DataDesigner generation, with every row accounted for.

DataDesigner drops a row silently when a model answer never parses, and processors (filters)
drop rows inside `create()`. Here a round's shortfall is put into `RunContext.drop` by column
and reason (from DataDesigner's per-task traces and the `drops` record), and any remainder
without a recorded reason is counted as such, never hidden. The kernel's engine sizes the
rounds, finalizes, judges and tops up (`bashgym_work_rounds`). Each round is its own DataDesigner
dataset, so a resumed run replays finished rounds from disk and continues the interrupted one
from its last finished batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import data_designer.config as dd
from bashgym_split import record_key
from bashgym_split.places import row_place

from bashgym.contracts import (
    Generated,
    InputError,
    RunContext,
    RunStopped,
)
from bashgym.events import RowsGenerated, UsageCharged
from bashgym.records import Usage
from bashgym.text import one_line
from bashgym_designer.constrain import base_alias, constrain
from bashgym_designer.designer import generate, seed_frame
from bashgym_designer.models import providers_for
from bashgym_designer.preflight import preflight

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import Step

UNEXPLAINED = (
    "pipeline: lost without a recorded reason (an interrupted attempt or a failed batch; "
    "see logs/datadesigner.log)"
)


def account(run: RunContext, gen: Any) -> None:
    """Put one generation's shortfall into run.dropped, by column/processor and reason."""
    for (column, reason), n in sorted(gen.failures.items()):
        run.drop(f"pipeline column {column}: {reason}", n)
    for row in gen.dropped:  # by which file and row (run.json's `dropped_rows`), or by its id
        key, where = record_key(row.row)
        place = row_place(row.row) or (key if where != "content" else None)
        run.drop(row.reason, by=row.by, row_id=place)
    if gen.unexplained and gen.stopped is None:
        run.drop(UNEXPLAINED, gen.unexplained)


STOPPED_ROWS = "stopped_round_rows"  # run.json's count of a stopped round's finished rows


def stop(run: RunContext, gen: Any) -> NoReturn:
    """A round whose model stopped answering (`faults`): run.json counts the rows of its
    finished batches as `stopped_round_rows`, its drops by reason and the rest as pending --
    the round's rows = stopped_round_rows + dropped + pending -- and the run ends with one line
    (the engine counts what was requested and the earlier rounds' `generated`). Its rows are
    not `generated`, which counts a pipeline's rows after its finalize: this round never
    reached it, nor the judges or the sinks. Nothing is lost: the same command resumes from
    the finished batches. The rows it dropped go on the exception (`dropped`), for the
    engine's dropped.jsonl of the failed run, as a finished round's go in its `Generated`."""
    account(run, gen)
    charge_failures(run, gen.failed_requests)
    run.count(STOPPED_ROWS, len(gen.dataset))
    run.count("pending", gen.unexplained)
    stopped = RunStopped(
        f"{gen.stopped}; {gen.unexplained} of {gen.requested} rows pending, finished batches "
        f"kept in {run.run_dir}: run the same command again to resume once it answers"
    )
    stopped.dropped = [*gen.failed_rows, *gen.dropped]  # type: ignore[attr-defined]
    raise stopped


def usage_reporter(run: RunContext) -> Callable[[str, str, int, int], None]:
    """`on_usage` for `generate`: each answered request as a UsageCharged event, under the
    alias the pipeline named (not its constrained copy), priced by its resolved model."""
    assert run.models is not None
    models = run.models

    def report(alias: str, model: str, input_tokens: int, output_tokens: int) -> None:
        name = base_alias(alias)
        tokens = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        cost = models.resolve(name).cost(input_tokens, output_tokens)
        run.emit(UsageCharged.of(tokens, cost, model=model, alias=name))

    return report


def skip_health_checks(builder: dd.DataDesignerConfigBuilder) -> None:
    for config in builder.model_configs:
        config.skip_health_check = True


def charge_failures(run: RunContext, failed: dict[str, tuple[str, int]]) -> None:
    for alias, (model, n) in failed.items():
        if n:
            run.emit(
                UsageCharged(model=model, alias=base_alias(alias), requests=0, failed_requests=n)
            )


def assemble(
    pipeline: Step, judges: list[Step], run: RunContext, seed: pd.DataFrame | None
) -> tuple[dd.DataDesignerConfigBuilder, dict[str, str]]:
    """The builder to generate from (the pipeline's build, every judge's configure, the seed
    attached ORDERED, structured and judge columns constrained to their JSON schema where the
    provider can), and which step added each column. A run and `preview`/`validate` both
    call this, so what they check is what runs. A plugin that raises while building becomes
    one InputError naming it."""
    builder = _call(f"pipeline {pipeline.name!r}", pipeline.obj.build, pipeline.options, run, seed)
    if not isinstance(builder, dd.DataDesignerConfigBuilder):  # what this runner accepts
        raise InputError(
            f"pipeline {pipeline.name!r} built a {type(builder).__name__}; the datadesigner "
            "runner takes a data_designer.config.DataDesignerConfigBuilder"
        )
    origins = {c.name: "pipeline" for c in builder.get_column_configs()}
    for judge in judges:
        _call(f"judge {judge.name!r}", judge.obj.configure, builder, judge.options, run)
        for column in builder.get_column_configs():
            origins.setdefault(column.name, f"judge {judge.name}")
    if seed is not None and len(seed) and builder.get_seed_config() is None:
        builder.with_seed_dataset(seed_frame(seed), sampling_strategy=dd.SamplingStrategy.ORDERED)
    if run.models is not None:
        constrain(builder, run.models)
    return builder, origins


def _call(who: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except InputError:
        raise
    except Exception as exc:  # a plugin failure of any kind: named, cause chained
        raise InputError(f"{who} failed to build its config: {one_line(exc)}") from exc


def generate_round(
    step: Step, judges: list[Step], run: RunContext, seed: pd.DataFrame | None, size: int,
    *, number: int, resume: bool = False,
) -> Generated:  # fmt: skip
    """Round `number` of `step`: build (on this round's seed rows), check the models before the
    first, generate `size` rows, account for every row lost. `summary` says how many rows came
    from disk (`resumed_rows`); the engine counts what the pipeline produced of them."""
    assert run.models is not None  # execute() opens the session for the whole run
    builder, _ = assemble(step, judges, run, seed)
    if number == 1:
        try:
            preflight(builder, run)
        except InputError:  # no row started: all pending (a rerun starts them)
            run.count("pending", size)
            raise
    skip_health_checks(builder)
    gen = generate(
        builder,
        num_records=size,
        run_dir=run.run_dir,
        settings=run.settings,
        providers=providers_for(run.models, builder.model_configs),
        on_rows=lambda n: run.emit(RowsGenerated(step="pipeline", n=n)),
        on_usage=usage_reporter(run),
        dataset_name="dataset" if number == 1 else f"dataset-round-{number}",
        resume=resume,
        seed=run.seed + number - 1,
        redact=run.redact,  # the failure records and the log are files of the run dir
    )
    if gen.stopped is not None:
        stop(run, gen)
    account(run, gen)
    for note in gen.notes:
        run.note(note)
    charge_failures(run, gen.failed_requests)
    summary = {"resumed_rows": gen.resumed_rows}
    return Generated(gen.dataset, [*gen.failed_rows, *gen.dropped], summary)
