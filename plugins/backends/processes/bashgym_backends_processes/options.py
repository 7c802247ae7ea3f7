"""What a user writes for `--backend processes` (`--set backend.KEY=VALUE`, or `[backend]` in a
run file)."""

from __future__ import annotations

import os

from pydantic import Field

from bashgym.contracts import Options


class ProcessesOptions(Options):
    """Options of the `processes` backend (validated before any work starts, like any step's)."""

    workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Worker processes (default: this machine's CPUs). Each loads the run's "
        "plugins once and runs one shard at a time on a core of its own.",
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        description="Shards of each generation round (default: one per worker).",
    )

    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1
