"""The `triangulation` judge: keep a row only when its gold answer agrees with the majority.

It reads what the csv-triangulation pipeline recorded per row (the gold answer, whether the
gold run submitted, the consistency runs' answers) and triangulates again, with its own
tolerances where set and the ones the row was made with (its `match` column) otherwise. So it
needs no model and no sandbox, and it can re-judge episodes read back from an earlier run's
episodes.jsonl with other tolerances. A dropped row is counted under a stable reason
(`matching.REASONS`); the row keeps the numbers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, Judge, RunContext
from bashgym.text import plain
from bashgym_pipelines_csv_triangulation.matching import triangulate
from bashgym_pipelines_csv_triangulation.options import TriangulationJudgeOptions

if TYPE_CHECKING:
    import pandas as pd

NEEDED = ("gold_submitted", "gold_answer", "consistency_answers")
NO_MESSAGES = "verified here but no SFT conversation (the pipeline used other tolerances)"


def _loaded(value: Any) -> Any:
    value = plain(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def verdict_of(row: dict[str, Any], options: TriangulationJudgeOptions) -> str | None:
    """None to keep `row`, else why it is dropped."""
    runs = _loaded(row.get("consistency_answers")) or []
    answers = [(bool(r.get("submitted")), r.get("answer")) for r in runs if isinstance(r, dict)]
    gold = (bool(plain(row.get("gold_submitted"))), _loaded(row.get("gold_answer")))
    recorded = _loaded(row.get("match"))
    match = options.for_row(recorded if isinstance(recorded, dict) else None)
    verdict = triangulate(gold, answers, match, p_value=row.get("answer_type") == "p_value")
    if not verdict.verified:
        return verdict.reason
    messages = plain(row.get("messages"))
    if options.require_messages and not messages:
        return NO_MESSAGES
    return None


class TriangulationJudge(Judge[TriangulationJudgeOptions]):
    """Keep episodes whose gold answer agrees with the majority of the consistency runs."""

    def verdicts(
        self, dataset: pd.DataFrame, options: TriangulationJudgeOptions, run: RunContext
    ) -> pd.Series:
        # ~0.5 s (measured): pandas only when rows are judged, not whenever the registry loads
        import pandas as pd

        missing = [c for c in NEEDED if c not in dataset.columns]
        if missing and len(dataset.columns):
            raise InputError(
                f"the triangulation judge needs the csv-triangulation pipeline's columns "
                f"{', '.join(missing)}; the rows have {', '.join(map(str, dataset.columns))}"
            )
        reasons = [verdict_of(row, options) for row in dataset.to_dict(orient="records")]
        return pd.Series(reasons, index=dataset.index, dtype=object)
