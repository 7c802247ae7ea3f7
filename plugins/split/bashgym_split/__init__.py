"""Deterministic train/validation split by a hash of a stable record id.

Why a hash and not row order or a seeded shuffle: a re-run, a resumed job or a source that yields
rows in another order must never move a record between train and validation, or validation
scores silently leak training data. A record's side depends only on (seed, record id).

Why blake2b and not `hash()`: Python salts `hash()` per process (PYTHONHASHSEED), so it is not
stable across runs. The fraction test is monotonic: raising `val_fraction` only moves records
from train to validation, never back.

A library of its own (not a sink's internals) because every sink that writes splits (nemo-jsonl,
hf-hub, third-party ones) must agree on which side a record is; it left the kernel, which knows
no sink (`bashgym.split` before).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from bashgym.text import plain

ID_COLUMNS = ("trace_id", "id", "record_id")
Split = Literal["train", "validation"]


def record_key(row: Mapping[str, Any], id_field: str | None = None) -> tuple[str, str]:
    """`(key, where)`: the row's stable id and the column it came from, or a content hash
    (`where = "content"`) when no id column holds a value. Ids beat content: a content hash
    changes as soon as a later step adds a column."""
    for name in (id_field,) if id_field else ID_COLUMNS:
        value = plain(row.get(name))
        if value not in (None, ""):
            return str(value), name
    text = json.dumps(plain(dict(row)), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), "content"


def score(key: str, seed: int) -> float:
    """The record's place in [0, 1): below `val_fraction` means validation."""
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def in_validation(key: str, seed: int, val_fraction: float) -> bool:
    """True when the record with `key` belongs to the validation split for this seed."""
    return val_fraction > 0 and score(key, seed) < val_fraction


def split_of(key: str, seed: int, val_fraction: float) -> Split:
    return "validation" if in_validation(key, seed, val_fraction) else "train"


def loadable(sides: Sequence[Split], scores: Sequence[float], val_fraction: float) -> list[Split]:
    """`sides` adjusted so that no split a loader reads is empty.

    Why: `datasets.load_dataset("json", data_files={"train": ..., "validation": ...})` fails on
    an empty file, and a small run at `val_fraction = 0.05` leaves validation empty most of the
    time. With two or more records and `val_fraction > 0`, the record closest to the
    validation side (lowest score) moves there when it is empty, and the one furthest from it
    moves to train when train is empty; one record (or `val_fraction = 0`) is train only, so
    the writer writes no validation file at all. Deterministic: the same records and seed
    give the same sides, whatever their order.
    """
    out = list(sides)
    if len(out) < 2 or val_fraction <= 0:
        return ["train"] * len(out)
    for empty, pick in (("validation", min), ("train", max)):
        if empty not in out:
            i = pick(range(len(out)), key=lambda j: (scores[j], j))
            out[i] = empty
    return out
