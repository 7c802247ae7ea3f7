"""Seed rows from any source, reduced to the one thing the pipelines use: a task to draw on.

Sources disagree on where the task is: the prompts and files sources give a `prompt` or `task`
column, a chat export a `messages` list, and the claude-code / codex sources a `trace` column
holding a whole Trace as JSON (the task is its first real user message). Rather than make the
DataDesigner config parse each shape (its Jinja sandbox cannot parse JSON), the seed is reduced
here, in pandas, to `seed_task` plus provenance (`seed_id`, `seed_source`); the bulky trace
never enters the generation. The reduced seed is written to a Parquet file in the run dir so
the DataDesigner config stays exportable (a DataFrame seed cannot be serialized) and the run
keeps exactly what it drew on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bashgym.contracts import InputError, RunContext
from bashgym.records import TRACE_COLUMN
from bashgym.text import plain

TEXT_COLUMNS = ("task", "prompt", "instruction", "question", "query", "request")
STRUCTURED_COLUMNS = (TRACE_COLUMN, "messages")
ID_COLUMNS = ("trace_id", "id", "record_id", "session_id")
MAX_SEED_CHARS = 2000
# User turns that are harness noise, not a request: slash-command echoes, command output,
# reminders injected by the agent (Claude Code writes these as user lines).
_NOISE = re.compile(r"^\s*<(command-|local-command|system-reminder|user-prompt-submit-hook)")

EXAMPLE_TASKS = [
    "The /orders endpoint returns 500 when `limit` is 0; it should return an empty list. Fix "
    "it in api/orders.py and add a regression test.",
    "Add a `--since DATE` option to the `report` CLI command that filters entries by their "
    "created_at date. Keep the default behaviour unchanged.",
    "Our CSV importer loads the whole file into memory and falls over on 2 GB exports; make "
    "importer/csv_loader.py stream rows instead.",
    "Split the 600-line utils/helpers.py into smaller modules by topic without changing any "
    "public import path.",
]


def example_seed() -> pd.DataFrame:
    """A few realistic task rows, for `bashgym preview` without a source."""
    return pd.DataFrame(
        {"id": [f"example-{i}" for i in range(len(EXAMPLE_TASKS))], "task": EXAMPLE_TASKS}
    )


def task_columns(seed: pd.DataFrame, wanted: str | None, pipeline: str) -> list[str]:
    """The seed columns to take the task from, best first: `wanted` alone when given, else
    every known task column present (a chat export may hold `prompt` on some rows and
    `messages` on others). InputError listing the columns when none fits."""
    columns = [str(c) for c in seed.columns]
    if wanted is not None:
        if wanted not in columns:
            raise InputError(
                f"{pipeline}: seed_column {wanted!r} is not a seed column; the seed has "
                f"{sorted(columns)}"
            )
        return [wanted]
    found = [name for name in (*TEXT_COLUMNS, *STRUCTURED_COLUMNS) if name in columns]
    if not found:
        raise InputError(
            f"{pipeline}: cannot find the task in the seed columns {sorted(columns)}; expected "
            f"one of {list(TEXT_COLUMNS + STRUCTURED_COLUMNS)} (or set pipeline.seed_column)"
        )
    return found


def first_user_text(messages: Any) -> str | None:
    """The first user message that is a request (not harness noise) in OpenAI-style messages."""
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        extra = message.get("extra") or {}
        if extra.get("meta") or extra.get("compact_summary"):
            continue
        content = message.get("content")
        if isinstance(content, list):  # OpenAI content parts
            content = "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
        if isinstance(content, str) and content.strip() and not _NOISE.match(content):
            return content.strip()
    return None


def task_of(value: Any, column: str) -> str | None:
    """The task text a cell holds: text as is, else the first user turn of a trace/messages."""
    value = plain(value)
    if isinstance(value, str) and column in STRUCTURED_COLUMNS:
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping):  # a Trace as JSON
        value = value.get("messages")
    if isinstance(value, list):
        return first_user_text(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _first_of(row: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = plain(row.get(name))
        if value not in (None, ""):
            return str(value)
    return None


def prepare_seed(
    seed: pd.DataFrame, column: str | None, run: RunContext, pipeline: str
) -> pd.DataFrame:
    """`seed_task`, `seed_id`, `seed_source` per usable seed row; rows without a task are
    counted as dropped (`<pipeline>: seed row has no task`), and none left is an InputError."""
    names = task_columns(seed, column, pipeline)
    rows = []
    for row in seed.to_dict(orient="records"):
        task = next((t for n in names if (t := task_of(row.get(n), n)) is not None), None)
        if task is None:
            continue
        rows.append(
            {
                "seed_task": task[:MAX_SEED_CHARS],
                "seed_id": _first_of(row, ID_COLUMNS),
                "seed_source": _first_of(row, ("source", "source_file")),
            }
        )
    missing = len(seed) - len(rows)
    where = " or ".join(repr(n) for n in names)
    if not rows:
        raise InputError(f"{pipeline}: no seed row has a task in column {where}")
    if missing:
        run.drop(f"{pipeline}: seed row has no task in column {where}", missing)
    return pd.DataFrame(rows, columns=["seed_task", "seed_id", "seed_source"]).astype(object)
