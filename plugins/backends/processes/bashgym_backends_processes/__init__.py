"""The `processes` backend (`bashgym run … --backend processes`): each generation round in
shards on worker processes of this machine, so a CPU-bound DataDesigner run uses more than the
one core its event loop and the GIL give it. The run store, events and counts stay on the
driver, as with the `ray` backend (both share `bashgym-shards`). Standard library only.
Declared API: `ProcessesBackend`, `ProcessesOptions`.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_backends_processes.backend import ProcessesBackend
from bashgym_backends_processes.options import ProcessesOptions

__all__ = ["ProcessesBackend", "ProcessesOptions"]


@hookimpl
def register_backends(register: Any) -> None:
    register("processes", ProcessesBackend())
