"""BashGym runner `datadesigner`: pipelines' NeMo DataDesigner configs turned into rows.

The runner (`DataDesignerRunner`), the `datadesigner-config` pipeline (a DataDesigner config
file run as written) and the `[designer]` settings table. What pipelines, judges and commands
built on DataDesigner share lives in the `bashgym-designer` library (`bashgym_designer.rounds`,
`.designer`, `.drops`, ...); the names below are re-exported from it only until every plugin
imports them from there.
"""

from __future__ import annotations

from bashgym_designer.constrain import base_alias
from bashgym_designer.designer import (
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
from bashgym_designer.drops import DROPS_DIR, read_drops, record_drops
from bashgym_designer.rounds import account, assemble, requested_records
from bashgym_designer.settings import DesignerSettings

from bashgym import hookimpl

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
