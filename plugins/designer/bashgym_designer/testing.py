"""For the tests of plugins built on DataDesigner (the judges' and this library's own): settings
with DataDesigner set up offline and quiet, and builders over given seed rows, so each test file
does not grow its own copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import data_designer.config as dd

from bashgym.settings import Settings
from bashgym_designer.designer import prepare_environment, seed_frame


def ready_settings(folder: Path) -> Settings:
    """Settings caching under `folder`, DataDesigner's environment prepared (before its engine
    is first imported)."""
    settings = Settings(cache_dir=folder / "cache")
    prepare_environment(settings)
    return settings


def seeded(rows: dict[str, list[Any]]) -> dd.DataDesignerConfigBuilder:
    """A builder whose seed dataset is `rows`, read in order."""
    import pandas as pd  # ~0.5 s: only the tests that build seeded configs pay for it

    builder = dd.DataDesignerConfigBuilder()
    builder.with_seed_dataset(seed_frame(pd.DataFrame(rows)))
    return builder


def scored_builder(scores: list[int]) -> dd.DataDesignerConfigBuilder:
    """Seed rows with an int `n` and a judge-like nested JSON column `quality`."""
    builder = seeded({"n": scores})
    builder.add_column(
        dd.ExpressionColumnConfig(
            name="quality", expr='{"correctness": {"score": {{ n }}, "reasoning": "r{{ n }}"}}'
        )
    )
    return builder
