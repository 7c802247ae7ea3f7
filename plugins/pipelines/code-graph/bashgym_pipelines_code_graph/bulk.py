"""Building a graph allocates millions of small objects that all stay alive (nodes, id
strings, edge tuples), and every one of them lets CPython's cyclic garbage collector run
again, each full pass scanning the whole ever-growing heap: on the standard library that
took 45% of the graph build. Those objects hold no reference cycles (an ast tree has no
parent links; nodes and edges refer to ids, not to each other), so nothing is lost by pausing
the collector while they are built; reference counting still frees everything else at once,
and the collector resumes when the build is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for a bulk build (no-op when it is already off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
