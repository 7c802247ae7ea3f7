"""Look at a pipeline without a run: list, validate, preview and export its DataDesigner config.

A full run reads every source row and writes sinks; a pipeline author iterating on prompts wants
the config checked in a second (`validate`), a handful of rows on screen (`preview`), or the
config handed to the `data-designer` CLI (`export`). All three start from `prepare()`, which
assembles the builder exactly as the engine's run does (build, judges configure, seed attached
ORDERED), so what is checked here is what `bashgym run` would generate.

`serve=False` resolves runtime-served aliases (the embedded model) without starting a server:
listing, validating and exporting never call a model.

One module per job: `preparing` (spec to builder), `columns` (what a builder holds),
`validating`, `previewing`, `exporting`, `listing`, and `messages` (DataDesigner's output kept
off the screen and condensed into one-line errors).
"""

from bashgym.pipeline_ops.columns import Column, config_columns, used_aliases
from bashgym.pipeline_ops.exporting import Export, export
from bashgym.pipeline_ops.listing import PipelineInfo, list_pipelines
from bashgym.pipeline_ops.messages import condense, one_line
from bashgym.pipeline_ops.preparing import Prepared, assemble, prepare, resolve_pipeline
from bashgym.pipeline_ops.previewing import Preview, preview
from bashgym.pipeline_ops.validating import Validation, validate

__all__ = [
    "Column",
    "Export",
    "PipelineInfo",
    "Prepared",
    "Preview",
    "Validation",
    "assemble",
    "condense",
    "config_columns",
    "export",
    "list_pipelines",
    "one_line",
    "prepare",
    "preview",
    "resolve_pipeline",
    "used_aliases",
    "validate",
]
