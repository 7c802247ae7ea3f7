"""The `datadesigner` runner: a pipeline's DataDesignerConfigBuilder, generated in rounds.

The kernel knows pipelines only as configs a runner turns into rows; this is the runner for
NeMo DataDesigner configs (the one every built-in pipeline uses). A run with judges that add
DataDesigner columns but no pipeline sends its source rows through `PassThrough`, one for one,
so those judges score them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.designer import prepare_environment
from bashgym_designer.rounds import generate_round
from bashgym_designer.settings import designer_settings

from bashgym.contracts import (
    Generated,
    NoOptions,
    Pipeline,
    PipelineOptions,
    RunContext,
    Runner,
)
from bashgym_runners_datadesigner import templates
from bashgym_runners_datadesigner.progress import column_progress
from bashgym_runners_datadesigner.scrubbed import scrubbed_artifacts

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import Step


class PassThrough(Pipeline):
    """Source rows through DataDesigner one for one (for judges' columns only)."""

    runner = "datadesigner"

    def build(self, options: Any, run: RunContext, seed: pd.DataFrame | None) -> Any:
        return dd.DataDesignerConfigBuilder()


class DataDesignerRunner(Runner[NoOptions]):
    """NeMo DataDesigner: a round per call, resumed from finished batches, drops by reason."""

    def generate(
        self, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None, n: int,
        run: RunContext, *, round: int, resume: bool,
    ) -> Generated:  # fmt: skip
        prepare_environment(run.settings)  # before the pipeline's build first imports DataDesigner
        templates.install()  # each prompt template compiled once, not once per row
        step: Any = pipeline
        if step is None:
            step = SimpleNamespace(  # duck-types the Step fields generate_round uses
                obj=PassThrough(), options=PipelineOptions(num_records=n), name="passthrough"
            )
        # per-column progress inside a batch (`progress`); no secret in its files (`scrubbed`)
        with column_progress(run, round), scrubbed_artifacts(run):
            generated = generate_round(step, judges, run, seed, n, number=round, resume=resume)
        generated.summary["buffer_size"] = designer_settings(run.settings).buffer_size
        return generated
