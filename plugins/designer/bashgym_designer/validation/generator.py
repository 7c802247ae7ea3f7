"""The `bashgym-code-validation` column generator: checks a whole batch of code cells at once.

Full-column so ruff lints a batch in one run and shell checks run in parallel. Results are
written back onto the batch's own index, never joined by position: after an upstream column
dropped a row the batch keeps the surviving rows' original row numbers (e.g. 0, 2, 3), and
DataDesigner's `ValidationColumnGenerator` concatenates a fresh 0..n-1 frame onto it, which
misaligns every result and makes DataDesigner discard the whole row group.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from data_designer.config.errors import InvalidConfigError
from data_designer.engine.column_generators.generators.base import ColumnGeneratorFullColumn

from bashgym_designer.validation.checks import CodeCheck
from bashgym_designer.validation.config import CodeValidationColumnConfig

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)


class CodeValidationColumnGenerator(ColumnGeneratorFullColumn[CodeValidationColumnConfig]):
    """Adds `config.name`: one `CodeCheck` result dict per row of `config.target_column`."""

    def generate(self, data: pd.DataFrame) -> pd.DataFrame:
        target = self.config.target_column
        if target not in data.columns:
            raise InvalidConfigError(
                f"code validation column {self.config.name!r}: target column {target!r} is "
                f"missing from the batch (columns: {', '.join(map(str, data.columns))})"
            )
        logger.info(
            "🔍 Checking %d rows of %r as %s for column %r",
            len(data),
            target,
            self.config.language,
            self.config.name,
        )
        out = data.copy()
        # A list assigned to a column follows the frame's own index, row for row.
        out[self.config.name] = CodeCheck(self.config.language)(data[target].tolist())
        return out
