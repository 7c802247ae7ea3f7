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

from bashgym_designer.rounds import assemble

from bashgym import hookimpl
from bashgym_commands_pipeline.columns import Column, config_columns, used_aliases
from bashgym_commands_pipeline.exporting import Export, export
from bashgym_commands_pipeline.listing import PipelineInfo, list_pipelines
from bashgym_commands_pipeline.messages import condense, one_line
from bashgym_commands_pipeline.preparing import Prepared, prepare, resolve_pipeline
from bashgym_commands_pipeline.previewing import Preview, preview
from bashgym_commands_pipeline.validating import Validation, validate

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


@hookimpl
def register_commands(app):
    # ~30 ms on top of this package (typer, bashgym_cli; measured): only when the CLI builds its
    # commands, not in every process that loads the plugins
    from bashgym_commands_pipeline.cli import register

    register(app)
