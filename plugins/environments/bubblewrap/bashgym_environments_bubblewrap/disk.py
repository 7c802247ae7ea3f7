"""The session's disk limit: what its commands may add to the workspace and its /tmp together.

No quota mechanism reaches a bind-mounted folder without root and a file system that has quotas
(a loop device, XFS project quotas), and a tmpfs /tmp would not be kept from one command to the
next. So the limit is measured: the allocated size of both folders (as `du`: blocks, each hard
link once, links not followed) when the session opens is the base. Walking a big workspace
costs (0.3 s for 30,000 files), so a cheap sign comes first: every 0.5 s the watcher thread
reads the free space of the file systems they are on (statvfs); only when what was used since
the last walk could have taken the session past its limit (or 30 s have passed: space freed
elsewhere could hide growth) does it walk again, never spending over a tenth of the time walking.
It calls `over` when the session has grown past `disk_mb` and is still growing.

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
BACKSTOP_S = 30.0  # a walk at least this often, whatever statvfs says


def free_bytes(folders: Sequence[Path]) -> int:
    """Free bytes on the file systems holding `folders` (each counted once)."""
    seen: dict[int, int] = {}
    for folder in folders:
        try:
            dev = os.stat(folder).st_dev
            if dev not in seen:
                st = os.statvfs(folder)
                seen[dev] = st.f_bfree * st.f_frsize
        except OSError:
            continue
    return sum(seen.values())


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
        self.free = free_bytes(self.folders)  # at the last look
        self.base = used_bytes(self.folders)
        self.grown = 0  # bytes over the base at the last look
        self.looked = time.monotonic()
        self.tripped = 0  # how many times `over` was called
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bashgym-disk-watch", daemon=True)
        self._thread.start()

    def look(self) -> bool:
        """Measure now; True when over the limit and grown since the last look."""
        with self._lock:
            free = free_bytes(self.folders)
            grown = used_bytes(self.folders) - self.base
            growing = grown > self.grown
            self.grown, self.free, self.looked = grown, free, time.monotonic()
            return grown > self.limit and growing

    def is_over(self) -> bool:
        return self.grown > self.limit

    def may_be_over(self) -> bool:
        """Whether a walk is needed: over at the last look (to see it shrink), or the space
        used on the file systems since then could have taken the session past the limit."""
        return self.is_over() or self.grown + (self.free - free_bytes(self.folders)) > self.limit

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        next_walk = 0.0  # the earliest time of the next walk (WALK_SHARE)
        while not self._stop.wait(MIN_INTERVAL_S):
            now = time.monotonic()
            if now < next_walk or not (self.may_be_over() or now - self.looked > BACKSTOP_S):
                continue
            if self.look():
                self.tripped += 1
                self.over()
            next_walk = now + (time.monotonic() - now) / WALK_SHARE
