"""`bashgym preview`: a few rows through DataDesigner's in-memory preview and the pipeline's
finalize, every requested row that does not come out counted by the reason a run would give.

A preview is the author's quick look, so nothing is written to sinks; but it must not lie
either: rows lost to unparseable answers or filters are counted as in a run (a preview whose
every row was dropped is an empty result, not an error), and any other DataDesigner failure
is one line quoting the log's warnings, with the run dir kept so the named log stays readable.

The models are checked first by the run's own preflight (`bashgym_designer.preflight`), not by
DataDesigner's health check: a model that does not answer is the same one line as in `bashgym
run` (`model alias 'default' does not answer: connection refused at ...`, exit 2), not
DataDesigner's generation error, and only the aliases the config's columns call are asked.

No secret reaches the preview's folder or the terminal (README "Secret scrubbing"), as in a run:
its log is written redacted (`messages.quiet`), its failure records by the designer's own
writer with `run.redact`, DataDesigner's files inside the runner's `scrubbed_artifacts` (the
processors' names and reasons, and the rows handed to the processors: a preview's never touch
the disk, so its wrapper of `process_preview` scrubs them). What is printed, rows, drop reasons
and the error line, is scrubbed too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bashgym_designer.designer import (
    Generation,
    all_rows_dropped,
    record_failures,
    task_failures,
)
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_designer.preflight import preflight
from bashgym_designer.rounds import account, skip_health_checks
from bashgym_runners_datadesigner.scrubbed import scrubbed_artifacts
from data_designer.errors import DataDesignerError

from bashgym.contracts import Generated, InputError, RunContext
from bashgym_commands_pipeline.messages import log_problems, one_line, quiet
from bashgym_commands_pipeline.preparing import Prepared

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Preview:
    dataset: pd.DataFrame  # finalized rows, in the pipeline's output format
    requested: int
    generated: int  # rows DataDesigner returned, before finalize
    dropped: dict[str, int]  # reason -> rows, from generation and finalize


def preview(prepared: Prepared, n: int) -> Preview:
    """Generate `n` rows with DataDesigner's `preview()` against the run's model providers, then
    `finalize` them. Every requested row that does not come out is counted under the reason a
    run would give it (`bashgym_designer.rounds.account`): cells that failed for good, rows a
    processor dropped, rows `finalize` dropped, and any remainder.

    A preview whose every row was dropped for a countable reason (unparseable answers, filters)
    is a result with zero rows, as in a run; any other DataDesigner failure is an InputError
    quoting the log's warnings, and the run dir is kept so the log it names stays readable.
    """
    run, step = prepared.run, prepared.pipeline
    assert run.models is not None
    preflight(prepared.builder, run)  # InputError: one line, as a run gives (exit 2)
    skip_health_checks(prepared.builder)  # checked just now, and counted: not asked twice
    providers = providers_for(run.models, prepared.builder.model_configs)
    designer = prepared.designer(providers)
    try:
        with quiet(run) as log_file, scrubbed_artifacts(run):
            results = designer.preview(prepared.builder, num_records=n)
    except DataDesignerError as exc:
        record_failures(designer, redact=run.redact)  # as a run does: all_rows_dropped reads them
        generation = all_rows_dropped(designer, n, 0)
        if generation is None:
            prepared.keep_dir()
            details = log_problems(log_file) if "warnings above" in str(exc) else ""
            raise InputError(
                run.redact(
                    f"preview of pipeline {step.name!r} failed: {one_line(exc)}{details} "
                    f"(DataDesigner's log: {log_file})"
                )
            ) from None  # the cause quotes what was just redacted
    else:
        artifact_dir = Path(designer.last_builder.artifact_storage.base_dataset_path)
        generation = Generation(
            dataset=results.dataset.reset_index(drop=True),
            requested=n,
            artifact_dir=artifact_dir,
            failures=task_failures(results.task_traces or []),
            dropped=read_drops(artifact_dir),
        )
    account(run, generation)
    dataset: pd.DataFrame = generation.dataset
    generated = len(dataset)
    if generated:
        dataset = step.obj.finalize(dataset, step.options, run)
        if isinstance(dataset, Generated):  # its dropped rows: a preview writes no dropped.jsonl
            dataset = dataset.dataset
        if prepared.scrubbing is not None:  # prepare() always opens one
            dataset = prepared.scrubbing.frame(dataset)  # it is about to be printed
    return Preview(dataset.reset_index(drop=True), n, generated, redacted_counts(run))


def redacted_counts(run: RunContext) -> dict[str, int]:
    """The run's drop reasons as printed, redacted (a run's are, by its event bus: a preview
    has none); reasons that become one when redacted are added up."""
    counts: Counter[str] = Counter()
    for reason, n in run.dropped.items():
        counts[run.redact(reason)] += n
    return dict(counts)
