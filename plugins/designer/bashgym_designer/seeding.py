"""`--seed N` for DataDesigner's samplers: the same seed, config and inputs, the same samples.

DataDesigner 0.9 builds every sampler generator with numpy's global random state and offers no
seed option; batches run concurrently, so even seeding the global state would not repeat. Here
each batch's sampler generator gets its own RandomState, derived from the run's seed and the
batch (row group) number, by wrapping the one factory method that makes it. The wrapper is
installed once per process and is inert unless a seed is set for the `create()` under way.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from typing import Any

_lock = threading.Lock()
_seed: int | None = None
_installed = False


def batch_seed(seed: int, row_group: int) -> int:
    digest = hashlib.blake2b(f"{seed}:{row_group}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def _install() -> None:
    global _installed
    # DataDesigner's engine: imported after prepare_environment (bashgym_designer.designer)
    from data_designer.engine.column_generators.generators.samplers import (
        SamplerColumnGenerator,
    )
    from data_designer.engine.observability import runtime_correlation_provider

    original = SamplerColumnGenerator._create_sampling_dataset_generator

    def seeded(self: Any) -> Any:
        generator = original(self)
        if _seed is not None:
            import numpy as np  # start-up: only a seeded run needs it

            row_group = getattr(runtime_correlation_provider.current(), "row_group", None) or 0
            generator.rng = np.random.RandomState(batch_seed(_seed, row_group))
            generator._shared_sampler_kwargs["random_state"] = generator.rng
        return generator

    SamplerColumnGenerator._create_sampling_dataset_generator = seeded
    _installed = True


@contextlib.contextmanager
def seeded_samplers(seed: int | None) -> Iterator[None]:
    """Samplers of the `create()` run inside this block draw from `seed` (None: unseeded)."""
    global _seed
    with _lock:
        if not _installed:
            _install()
        _seed = seed
    try:
        yield
    finally:
        with _lock:
            _seed = None
