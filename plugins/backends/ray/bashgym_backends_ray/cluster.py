"""Connecting to Ray: an existing cluster (`address`), or a local instance started for the run.

Ray is this plugin's extra (`pip install 'bashgym-backends-ray[ray]'`), imported only when a run
names the backend. Workers of a local instance run this Python as it is: Ray's `uv run` hook
(on by default when the driver runs under `uv run`) would make each worker re-sync the project
first (minutes, and a build of every source dependency), so it is turned off here.
"""

from __future__ import annotations

import os
from typing import Any

from bashgym.contracts import InputError
from bashgym.text import one_line
from bashgym_backends_ray.options import RayOptions

UV_HOOK = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"


def import_ray() -> Any:
    """The `ray` module (its `uv run` hook off unless the user's env turns it on), or an
    InputError saying how to install it."""
    chosen = os.environ.get(UV_HOOK)
    os.environ.setdefault(UV_HOOK, "0")  # read when ray is first imported...
    try:
        import ray
        from ray._private import ray_constants
    except ImportError:
        raise InputError(
            "the ray backend needs Ray: pip install 'bashgym-backends-ray[ray]'"
        ) from None
    if chosen is None:  # ...which may have happened before this plugin was asked
        ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False
    return ray


def connect(options: RayOptions) -> bool:
    """Join `options.address` (or start a local instance); True when this call did (and the
    run must shut it down), False when this process was already connected (kept as it is)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {
        "address": options.address,
        "log_to_driver": options.log_to_driver,
        "logging_level": "WARNING",
    }
    if options.address is None:  # a local instance: sized here, no dashboard
        kwargs.update(num_cpus=options.num_cpus, include_dashboard=False)
    elif options.num_cpus is not None:
        raise InputError("backend.num_cpus sizes a local Ray instance; a cluster has its own")
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        where = options.address or "a local instance"
        raise InputError(f"backend ray: cannot connect to {where}: {one_line(exc)}") from None
    return True


def cluster_cpus() -> int:
    """The CPUs the cluster has (alive nodes), at least 1."""
    ray = import_ray()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def alive_nodes() -> int:
    ray = import_ray()
    return sum(1 for node in ray.nodes() if node.get("Alive"))
