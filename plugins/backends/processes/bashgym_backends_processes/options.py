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
        description="Processes that run shards, this one included (default: this machine's "
        "CPUs): workers - 1 are started, each loading the run's plugins once; each runs one "
        "shard at a time on a core of its own. 1: every shard in this process.",
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        description="Shards of each generation round (default: one per process).",
    )

    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1
