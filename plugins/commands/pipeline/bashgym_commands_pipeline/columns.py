"""What a DataDesigner builder holds, read for people: its columns, their origin, the models.

`validate` prints every column with the step that added it, `pipeline list` shows the columns
each pipeline builds, and `validate` and `export` need to know which model aliases columns
call. DataDesigner's configs answer these in several places (seed source, column configs,
enum-valued types); this module reads them in one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import data_designer.config as dd

if TYPE_CHECKING:
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # DataDesigner column_type, e.g. "sampler", "llm-text", "seed-dataset"
    origin: str  # "seed", "pipeline" or "judge <name>"
    drop: bool = False


def enum_text(value: Any) -> str:
    """An enum-valued config field (column_type, validator_type) as its plain value."""
    return str(getattr(value, "value", value))


def column_of(config: Any, origins: dict[str, str]) -> Column:
    """One generated column config, with the step that added it (default: the pipeline)."""
    return Column(
        config.name,
        enum_text(config.column_type),
        origins.get(config.name, "pipeline"),
        bool(getattr(config, "drop", False)),
    )


def generated_columns(builder: DataDesignerConfigBuilder, origins: dict[str, str]) -> list[Column]:
    return [column_of(c, origins) for c in builder.get_column_configs()]


def config_columns(builder: DataDesignerConfigBuilder, origins: dict[str, str]) -> list[Column]:
    """Every column of the config: seed columns (when the seed is a frame; a file or agent
    rollout source names its columns only when DataDesigner reads it), then generated ones."""
    seed = frame_seed(builder)
    seed_columns = [] if seed is None else [str(c) for c in seed.columns]
    return [Column(name, "seed-dataset", "seed") for name in seed_columns] + generated_columns(
        builder, origins
    )


def frame_seed(builder: DataDesignerConfigBuilder) -> pd.DataFrame | None:
    """The DataFrame of a DataFrame seed source, else None."""
    seed_config = builder.get_seed_config()
    if seed_config is not None and isinstance(seed_config.source, dd.DataFrameSeedSource):
        return seed_config.source.df
    return None


def used_aliases(builder: DataDesignerConfigBuilder) -> dict[str, list[str]]:
    """Model alias -> the columns that call it."""
    used: dict[str, list[str]] = {}
    for column in builder.get_column_configs():
        for alias in column.get_model_aliases():
            used.setdefault(alias, []).append(column.name)
    return used
