"""The `ray` backend (`bashgym run … --backend ray`): agent tasks and generation shards on a Ray
cluster, or on a local Ray instance started for the run; the run store, events and counts stay
on the driver. Ray is the extra `ray` of this distribution, imported only when a run uses it.
Declared API: `RayBackend`, `RayOptions`.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_backends_ray.backend import RayBackend
from bashgym_backends_ray.options import RayOptions

__all__ = ["RayBackend", "RayOptions"]


@hookimpl
def register_backends(register: Any) -> None:
    register("ray", RayBackend())
