"""Generated rows → `prompt` / `response` rows (what nemo-jsonl's `rows` input reads).

The seed's own columns stay as metadata, so a row can be traced back to its source; one named
like an output column (`prompt`, `response`, ...) is kept as `source_<name>`.
`response_origin` says where the response came from: generated, improved (a rewrite of the
row's reference answer) or reference (kept as it was).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from bashgym.contracts import Generated
from bashgym.records import DroppedRow
from bashgym.text import plain
from bashgym_pipelines_from_external.mapping import NAME

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.contracts import RunContext

PROMPT, RESPONSE, JUDGE, SYSTEM = "gen_prompt", "gen_response", "gen_judge", "gen_system"
FLAGS = ("gen_has_instruction", "gen_has_reference")
GENERATED = (PROMPT, RESPONSE, JUDGE, SYSTEM, *FLAGS)
OUTPUT = {PROMPT: "prompt", RESPONSE: "response", SYSTEM: "system_prompt", JUDGE: "judge"}


def origin(row: Mapping[str, object], reference: str) -> str:
    if reference == "keep":
        return "reference"
    if reference == "improve" and plain(row.get("gen_has_reference")) is True:
        return "improved"
    return "generated"


def to_rows(dataset: pd.DataFrame, reference: str, run: RunContext) -> Generated:
    """The output rows, and each row dropped (no instruction or response) handed back whole."""
    import pandas as pd  # ~0.5 s (measured): only when rows are made, not at every start-up

    outputs = [*OUTPUT.values(), "response_origin"]
    seed_columns = [c for c in dataset.columns if c not in GENERATED]
    renamed = {c: f"source_{c}" if c in outputs else c for c in seed_columns}
    rows, dropped = [], []
    for row in dataset.to_dict(orient="records"):
        prompt, response = plain(row.get(PROMPT)), plain(row.get(RESPONSE))
        empty = (
            "empty instruction" if not (isinstance(prompt, str) and prompt.strip())
            else "empty response" if not (isinstance(response, str) and response.strip())
            else None
        )  # fmt: skip
        if empty is not None:
            run.drop(f"{NAME}: {empty}")
            dropped.append(DroppedRow(f"pipeline {NAME}", empty, plain(row)))
            continue
        out = {name: row.get(column) for column, name in OUTPUT.items()}
        out["response_origin"] = origin(row, reference)
        out.update({renamed[c]: row.get(c) for c in seed_columns})
        rows.append(out)
    return Generated(pd.DataFrame(rows, columns=[*outputs, *renamed.values()]), dropped)
