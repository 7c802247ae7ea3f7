"""BashGym runner `datadesigner`: pipelines' NeMo DataDesigner configs turned into rows.

The runner (`DataDesignerRunner`), the `datadesigner-config` pipeline (a DataDesigner config
file run as written) and the `[designer]` settings table. What pipelines, judges and commands
built on DataDesigner share lives in the `bashgym-designer` library (`bashgym_designer.rounds`,
`.designer`, `.drops`, `.models`, ...). `generate` is re-exported here only until the report
command's tests import it from `bashgym_designer.designer`.
"""

from __future__ import annotations

from bashgym_designer.designer import generate
from bashgym_designer.settings import DesignerSettings

from bashgym import hookimpl
from bashgym_runners_datadesigner.config_file import ConfigFilePipeline
from bashgym_runners_datadesigner.runner import DataDesignerRunner

__all__ = ["generate"]


@hookimpl
def register_settings(register):
    register("designer", DesignerSettings)


@hookimpl
def register_runners(register):
    register("datadesigner", DataDesignerRunner())


@hookimpl
def register_pipelines(register):
    register("datadesigner-config", ConfigFilePipeline())
