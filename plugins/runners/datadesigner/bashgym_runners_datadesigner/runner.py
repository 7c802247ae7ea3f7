"""The `datadesigner` runner: a pipeline's DataDesignerConfigBuilder, generated in rounds.

The kernel knows pipelines only as configs a runner turns into rows; this is the runner for
NeMo DataDesigner configs (the one every built-in pipeline uses). A run with judges that add
DataDesigner columns but no pipeline sends its source rows through `PassThrough`, one for one,
so those judges score them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.designer import prepare_environment
from bashgym_designer.rounds import run_pipeline
from bashgym_designer.settings import designer_settings

from bashgym.contracts import (
    Generated,
    NoOptions,
    Pipeline,
    PipelineOptions,
    RunContext,
    Runner,
)

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import RunSpec, Step


class PassThrough(Pipeline):
    """Source rows through DataDesigner one for one (for judges' columns only)."""

    def build(self, options: Any, run: RunContext, seed: pd.DataFrame | None) -> Any:
        return dd.DataDesignerConfigBuilder()


class DataDesignerRunner(Runner[NoOptions]):
    """NeMo DataDesigner: rounds with top-up, resume from finished batches, drops by reason."""

    def generate(
        self,
        pipeline: Step | None,
        judges: list[Step],
        seed: pd.DataFrame | None,
        run: RunContext,
        *,
        spec: RunSpec,
        apply_judges: Callable[[pd.DataFrame], pd.DataFrame],
        resume: bool,
    ) -> Generated:
        prepare_environment(run.settings)  # before the pipeline's build first imports DataDesigner
        step: Any = pipeline
        if step is None:
            rows = len(seed) if seed is not None else 0
            cap = min(rows, spec.num_records or rows) or None
            step = SimpleNamespace(  # duck-types the Step fields run_pipeline uses
                obj=PassThrough(), options=PipelineOptions(num_records=cap), name="passthrough"
            )
        outcome = run_pipeline(
            step, judges, spec, run, seed, apply_judges=apply_judges, resume=resume
        )
        summary = {
            "rounds": [asdict(r) for r in outcome.rounds],
            "buffer_size": designer_settings(run.settings).buffer_size,
        }
        return Generated(outcome.dataset, outcome.dropped, summary)
