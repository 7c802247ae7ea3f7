"""Generation rounds in shards, for backends that run them in other processes (the `ray` and
`processes` backends share it, so a shard is split, run and merged one way).

- `split`: on the driver, a round's rows as shards of contiguous rows with their seed rows
  (`shards`, from `plan` and `seed_rows`), their events replayed on the run (`replay`) and
  their rows merged back in seed order (`merge`), and a failed round's exception given every
  shard's dropped rows (`hand_back`);
- `worker`: in a worker process, the run's context rebuilt from a `Blueprint` (plain data, no
  key) and one shard (`shard`) or one agent task (`call`) run in it, its events sent back.
This is a library, not a plugin: it registers nothing.
"""

from __future__ import annotations

from bashgym_shards.split import hand_back, merge, plan, replay, seed_rows, shards
from bashgym_shards.worker import Blueprint, Outcome, Shard, StepRef

__all__ = [
    "Blueprint", "Outcome", "Shard", "StepRef", "hand_back", "merge", "plan", "replay",
    "seed_rows", "shards",
]  # fmt: skip
