"""A DataDesigner config file as a pipeline: `bashgym run --pipeline my_config.yaml`.

Users who already write DataDesigner configs (YAML or JSON, as `data-designer` or
`bashgym pipeline export` writes them) run them as they are, with BashGym's sources, judges,
scrubbing, accounting and sinks around them. Model providers in the file are named after
BashGym model aliases (exports do so), so endpoints and keys come from settings, never the
file (a provider no alias names uses the default alias, as everywhere in BashGym).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import data_designer.config as dd
from pydantic import Field

from bashgym.contracts import InputError, Pipeline, PipelineOptions, RunContext
from bashgym.text import one_line

if TYPE_CHECKING:
    import pandas as pd

SUFFIXES = (".yaml", ".yml", ".json")


class ConfigFileOptions(PipelineOptions):
    path: str = Field(description="The DataDesigner config file (YAML or JSON).")


class ConfigFilePipeline(Pipeline[ConfigFileOptions]):
    """A DataDesigner config file (YAML or JSON) run as written."""

    runner = "datadesigner"

    config_files: ClassVar[tuple[str, ...]] = SUFFIXES

    def build(self, options: ConfigFileOptions, run: RunContext, seed: pd.DataFrame | None) -> Any:
        path = Path(options.path)
        if path.suffix.lower() not in SUFFIXES or not path.is_file():
            raise InputError(f"{options.path!r} is not a DataDesigner config file (.yaml/.json)")
        try:
            builder = dd.DataDesignerConfigBuilder.from_config(path)
        except Exception as exc:  # pydantic, YAML and DataDesigner errors alike
            raise InputError(
                f"{options.path}: not a valid DataDesigner config: {one_line(exc)}"
            ) from exc
        used = {
            c.model_alias for c in builder.get_column_configs() if getattr(c, "model_alias", None)
        }
        for config in list(builder.model_configs):
            if config.alias not in used:  # DataDesigner's built-in defaults, say: never called
                builder.delete_model_config(config.alias)
        return builder
