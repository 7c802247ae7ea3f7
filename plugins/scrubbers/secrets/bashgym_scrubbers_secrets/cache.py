"""The scrubber's files in the user's cache: where they live, and how one is written so that a
concurrent start reads the old file or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path


def cache_file(*parts: str) -> Path:
    """A path under bashgym's user cache dir (platformdirs: the kernel's dependency, where
    every bashgym cache lives)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("bashgym")).joinpath(*parts)


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` beside `path` and rename it into place; a cache that cannot be written
    only costs the work it would have saved, so an OSError is swallowed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
