"""The session's disk limit: what its commands may add to the workspace and its /tmp together.

No quota mechanism reaches a bind-mounted folder without root and a file system that has quotas
(a loop device, XFS project quotas), and a tmpfs /tmp would not be kept from one command to the
next. So the limit is measured: the allocated size of both folders (as `du`: blocks, each hard
link once, links not followed) when the session opens is the base; a watcher thread measures
again while anything may be writing, at most every 0.5 s and never spending over a tenth of the
time walking, and calls `over` when the session has grown past `disk_mb` and is still growing.

What that makes true: a session is stopped within one interval of crossing its limit, so it can
go over by what it writes in that interval (plus one file up to `file_size_mb`, held per process
by RLIMIT_FSIZE); files it writes elsewhere (`writable` folders) are not counted; the number of
files is not limited, only their blocks.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

MB = 1024 * 1024
MIN_INTERVAL_S = 0.5
WALK_SHARE = 0.1  # at most this share of the time is spent walking


def used_bytes(folders: Sequence[Path]) -> int:
    """Bytes allocated under `folders` (`du` semantics: st_blocks, hard links once, symlinks
    and what they point to not followed, unreadable entries skipped)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(f) for f in folders]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total


class DiskWatch:
    """Measures a session's growth in a thread; calls `over()` once each time the growth passes
    `limit_mb` and got bigger since the last look (a command that deletes to get back under is
    never stopped)."""

    def __init__(self, folders: Sequence[Path], limit_mb: int, over: Callable[[], None]) -> None:
        self.folders, self.limit, self.over = list(folders), limit_mb * MB, over
        self.base = used_bytes(self.folders)
        self.grown = 0  # bytes over the base at the last look
        self.tripped = 0  # how many times `over` was called
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bashgym-disk-watch", daemon=True)
        self._thread.start()

    def look(self) -> bool:
        """Measure now; True when over the limit and grown since the last look."""
        with self._lock:
            grown = used_bytes(self.folders) - self.base
            growing = grown > self.grown
            self.grown = grown
            return grown > self.limit and growing

    def is_over(self) -> bool:
        return self.grown > self.limit

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        interval = MIN_INTERVAL_S
        while not self._stop.wait(interval):
            started = time.monotonic()
            if self.look():
                self.tripped += 1
                self.over()
            interval = max(MIN_INTERVAL_S, (time.monotonic() - started) / WALK_SHARE)
