"""What a user writes for `--backend ray` (`--set backend.KEY=VALUE`, or `[backend]` in a run
file): where the cluster is, what a local instance gets, what each task asks of a node."""

from __future__ import annotations

from pydantic import Field

from bashgym.contracts import Options


class RayOptions(Options):
    """Options of the `ray` backend (validated before any work starts, like any step's)."""

    address: str | None = Field(
        default=None,
        description="The cluster: `auto` (the one `ray start` runs on this machine), "
        "`ray://HOST:10001` (Ray Client) or `HOST:6379`; default: start a local Ray instance.",
    )
    num_cpus: int | None = Field(
        default=None, ge=1, description="CPUs of the local instance (default: this machine's)."
    )
    task_cpus: float = Field(
        default=1.0, gt=0, description="CPUs of each task slot (a slot's tasks share them)."
    )
    slot_tasks: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Agent tasks a slot runs at once, as coroutines in its one process (the "
        "in-process engine's way). Tasks that mostly wait on a model share a CPU well: on a "
        "node with fewer cores than concurrent tasks, 1 slot x 4 tasks beats 4 slots x 1. "
        "Each task then gets task_cpus / slot_tasks. Shards run one at a time per slot.",
    )
    task_memory_mb: int | None = Field(
        default=None,
        ge=1,
        description="Memory (MiB) of each task slot (a Ray resource, shared by its tasks).",
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        description="Shards of each generation round (default: one per slot, the cluster's "
        "CPUs / task_cpus).",
    )
    max_retries: int = Field(
        default=1,
        ge=0,
        le=5,
        description="Times Ray restarts a slot whose process or node died and reruns its task "
        "(not a failure of the task itself: that is its status).",
    )
    log_to_driver: bool = Field(
        default=False, description="Print the workers' stdout and stderr on this terminal."
    )
