"""The record of rows dropped inside DataDesigner, so the runner can count them by reason.

DataDesigner processors (such as the `bashgym-filter` processor of the judges-filter plugin)
run inside `create()`, where BashGym's RunContext is out of reach. They report each row they
drop here instead: one JSONL file per reporter under the dataset's artifact folder, one line
per row with its reason and the row itself (so report.html can show what was dropped, not only
how much). The folder sits beside DataDesigner's parquet files, so a resumed run keeps the
drops of the batches it keeps.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bashgym.records import DroppedRow
from bashgym.text import plain

DROPS_DIR = "bashgym-drops"


def record_drops(
    dataset_dir: Path, by: str, drops: Iterable[tuple[str, Mapping[str, Any]]]
) -> Path:
    """Append `(reason, row)` pairs for reporter `by`; returns the file written."""
    folder = Path(dataset_dir) / DROPS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (by.replace("/", "_").replace(" ", "_") + ".jsonl")
    lines = [
        json.dumps({"by": by, "reason": reason, "row": plain(row)}, default=str)
        for reason, row in drops
    ]
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())
    return path


def read_drops(dataset_dir: Path) -> list[DroppedRow]:
    """Every dropped row recorded under `dataset_dir` (none when nothing was dropped)."""
    folder = Path(dataset_dir) / DROPS_DIR
    out: list[DroppedRow] = []
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                out.append(DroppedRow(item["by"], item["reason"], item.get("row") or {}))
    return out
