"""A DataDesigner config file as a pipeline: `bashgym run --pipeline my_config.yaml`.

Users who already write DataDesigner configs (YAML or JSON, as `data-designer` or
`bashgym pipeline export` writes them) run them as they are, with BashGym's sources, judges,
scrubbing, accounting and sinks around them. Model providers in the file are named after
BashGym model aliases (exports do so), so endpoints and keys come from settings, never the
file (a provider no alias names uses the default alias, as everywhere in BashGym).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import data_designer.config as dd
from pydantic import Field, ValidationError, field_validator, model_validator

from bashgym.contracts import InputError, Pipeline, PipelineOptions, RunContext
from bashgym.text import condense, explain_validation

if TYPE_CHECKING:
    import pandas as pd

SUFFIXES = (".yaml", ".yml", ".json")


PATH_REQUIRED = "required: set pipeline.path=FILE to a DataDesigner config file (.yaml or .json)"


class ConfigFileOptions(PipelineOptions):
    path: str = Field(description="The DataDesigner config file (YAML or JSON).")

    @model_validator(mode="before")
    @classmethod
    def _path_missing_reaches_its_check(cls, data: Any) -> Any:
        """A missing field never reaches a field validator, and pydantic's own words do not
        say how to set it: an absent `path` goes on as None for `_path_given` to word. The
        field stays required (no default) for `bashgym options`."""
        if isinstance(data, dict) and "path" not in data:
            return {**data, "path": None}
        return data

    @field_validator("path", mode="before")
    @classmethod
    def _path_given(cls, value: Any) -> Any:
        """`path: required: set pipeline.path=FILE ...` wherever the options are checked
        (validate, run, `pipeline list`), as csv-triangulation says its `csv`."""
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(PATH_REQUIRED)
        return value


class ConfigFilePipeline(Pipeline[ConfigFileOptions]):
    """A DataDesigner config file (YAML or JSON) run as written."""

    runner = "datadesigner"

    config_files: ClassVar[tuple[str, ...]] = SUFFIXES

    def build(self, options: ConfigFileOptions, run: RunContext, seed: pd.DataFrame | None) -> Any:
        path = Path(options.path)
        if path.suffix.lower() not in SUFFIXES or not path.is_file():
            raise InputError(f"{options.path!r} is not a DataDesigner config file (.yaml/.json)")
        builder = load_builder(path, options.path)
        used = {
            c.model_alias for c in builder.get_column_configs() if getattr(c, "model_alias", None)
        }
        with _quiet_last_model_deleted():
            for config in list(builder.model_configs):
                if config.alias not in used:  # DataDesigner's built-in defaults, say: never called
                    builder.delete_model_config(config.alias)
        return builder


def load_builder(path: Path, shown: str) -> dd.DataDesignerConfigBuilder:
    """The builder of the config file at `path` (named `shown` in errors), or an InputError
    saying in plain words what is wrong with the file."""
    is_json = path.suffix.lower() == ".json"
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if is_json else _yaml(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        kind = "JSON" if is_json else "YAML"
        raise InputError(f"{shown} could not be read as {kind}: {exc}") from None
    if not isinstance(data, dict):
        held = (
            "nothing" if data is None else "a list" if isinstance(data, list) else "a single value"
        )
        raise InputError(
            f"{shown} is not a DataDesigner pipeline config: it holds {held}, where a "
            "`data_designer:` section with its `columns:` is needed"
        )
    if "data_designer" not in data and "columns" not in data:  # (`columns` at the top: shorthand)
        keys = ", ".join(map(str, list(data)[:8])) or "no keys"
        raise InputError(
            f"{shown} is not a DataDesigner pipeline config: it has no `data_designer` section "
            f"(its top-level keys: {keys}); a config holds `data_designer:` with its `columns:`, "
            "as `bashgym pipeline export` writes"
        )
    try:
        return dd.DataDesignerConfigBuilder.from_config(data)
    except ValidationError as exc:
        raise InputError(
            f"{shown} is not a valid DataDesigner pipeline config: {explain_validation(exc)}"
        ) from None
    except Exception as exc:  # DataDesigner's own errors (two columns of one name, say)
        why = condense(str(exc).splitlines()) or "DataDesigner refused it"
        raise InputError(f"{shown} is not a valid DataDesigner pipeline config: {why}") from exc


def _yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{where}{problem}") from None


LAST_MODEL_DELETED = "No model configurations found after deleting model configuration"


class _DropLastModelDeleted(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return LAST_MODEL_DELETED not in record.getMessage()


@contextmanager
def _quiet_last_model_deleted() -> Iterator[None]:
    """DataDesigner warns when the last model config is deleted ("Please add a model
    configuration"): here that is the point (a file whose columns call no model, whose only
    configs are DataDesigner's defaults), so that one warning is not shown; any other is."""
    logger = logging.getLogger(dd.DataDesignerConfigBuilder.__module__)
    quiet = _DropLastModelDeleted()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
