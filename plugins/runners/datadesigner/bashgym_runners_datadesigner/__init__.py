"""BashGym runner `datadesigner`: pipelines' NeMo DataDesigner configs turned into rows.

Its declared API, for pipelines, judges and commands built on DataDesigner: `assemble` (the
builder a run generates from), `generate` / `make_designer` / `prepare_environment` /
`seed_frame` (one `create()` into a run dir, DataDesigner set up offline and quiet),
`record_drops` / `read_drops` (how DataDesigner processors report the rows they drop), and the
accounting helpers `account`, `task_failures`, `failure_reason`.
"""

from __future__ import annotations

from bashgym_designer.settings import DesignerSettings

from bashgym import hookimpl
from bashgym_runners_datadesigner.constrain import base_alias
from bashgym_runners_datadesigner.designer import (
    PLACEHOLDER_PROVIDER,
    Generation,
    all_rows_dropped,
    failure_reason,
    generate,
    make_designer,
    prepare_environment,
    route_logs,
    seed_frame,
    task_failures,
)
from bashgym_runners_datadesigner.drops import DROPS_DIR, read_drops, record_drops
from bashgym_runners_datadesigner.rounds import account, assemble, requested_records

__all__ = [
    "DROPS_DIR",
    "PLACEHOLDER_PROVIDER",
    "Generation",
    "account",
    "all_rows_dropped",
    "assemble",
    "base_alias",
    "failure_reason",
    "generate",
    "make_designer",
    "prepare_environment",
    "read_drops",
    "record_drops",
    "requested_records",
    "route_logs",
    "seed_frame",
    "task_failures",
]


@hookimpl
def register_settings(register):
    register("designer", DesignerSettings)


@hookimpl
def register_runners(register):
    from bashgym_runners_datadesigner.runner import DataDesignerRunner

    register("datadesigner", DataDesignerRunner())


@hookimpl
def register_pipelines(register):
    from bashgym_runners_datadesigner.config_file import ConfigFilePipeline

    register("datadesigner-config", ConfigFilePipeline())
