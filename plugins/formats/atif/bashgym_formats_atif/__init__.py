"""BashGym format `atif`: ATIF (Harbor / Terminal-Bench) trajectories in and out.

One distribution, three things: the lossless converter (`atif_to_trace`, `trace_to_atif`,
`load_atif`, `dump_atif` — this package's declared API for other code), the `atif` source
(trajectory files → Traces) and the `atif` sink (Traces → one ATIF document per trace).
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_formats_atif.convert import (
    DEFAULT_SCHEMA_VERSION,
    atif_to_trace,
    dump_atif,
    load_atif,
    trace_to_atif,
)

__all__ = ["DEFAULT_SCHEMA_VERSION", "atif_to_trace", "dump_atif", "load_atif", "trace_to_atif"]


@hookimpl
def register_sources(register):
    # imported when the registry is collected, not by every command that loads the plugins: the
    # sink costs ~0.29 s on top of this package (pandas; measured), the source ~18 ms
    from bashgym_formats_atif.source import AtifSource

    register("atif", AtifSource())


@hookimpl
def register_sinks(register):
    from bashgym_formats_atif.sink import AtifSink  # (see above)

    register("atif", AtifSink())
