"""The `bashgym-filter` processor: drops failing rows after generation and records each one.

It runs at DataDesigner's after-generation stage, the only stage allowed to change the row
count, so every batch has been generated (and judged) before any row is dropped. Dropped rows
are written with `bashgym_designer.drops.record_drops` under the dataset folder, where
the runner counts them by reason; nothing is dropped without a record.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from data_designer.engine.processing.processors.base import Processor

from bashgym_designer.drops import record_drops
from bashgym_designer.filters.config import FilterProcessorConfig
from bashgym_designer.filters.rules import RuleEvaluator, row_record

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)


class FilterProcessor(Processor[FilterProcessorConfig]):
    """Keeps the rows passing every rule (in order); the first failing rule names the reason."""

    def process_after_generation(self, data: pd.DataFrame) -> pd.DataFrame:
        if len(data) == 0:
            return data
        evaluator = RuleEvaluator(self.config.rules, data.columns.to_list(), engine=self._engine())
        for i, error in evaluator.errors.items():
            logger.warning(
                "filter %r: rule %r cannot be evaluated (%s): it drops every row it reaches",
                self.config.name,
                self.config.rules[i].keep,
                error,
            )
        keep: list[bool] = []
        drops: list[tuple[str, dict[str, Any]]] = []
        for raw in data.to_dict(orient="records"):
            verdict = evaluator.verdict(row_record(raw))
            keep.append(verdict is None)
            if verdict is not None:
                drops.append((verdict.reason, raw))
        if drops:
            record_drops(self.base_dataset_path, f"filter {self.config.name}", drops)
            logger.info("filter %r dropped %d of %d rows", self.config.name, len(drops), len(data))
        return data[keep].reset_index(drop=True)

    def _engine(self) -> Any:
        """DataDesigner's Jinja engine setting for this run (secure unless set to native)."""
        run_config = getattr(self.resource_provider, "run_config", None)
        return getattr(run_config, "jinja_rendering_engine", None)
