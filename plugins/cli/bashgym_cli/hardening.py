"""BashGym's own process is not dumpable: no child of the same user reads its memory or env.

`/proc/PID/environ` shows the environment block a process started with, so removing an API key
from `os.environ` hides nothing; what a same-user process can read there (and in
`/proc/PID/mem`, or with ptrace) is governed by the dumpable flag. Clearing it, as ssh-agent and
gpg-agent do, makes those files root-only for every command BashGym starts, in any environment,
model servers and executors included. Side effects: no core dumps of BashGym, and py-spy or gdb
need root to attach. ctypes, not a package: the PyPI prctl bindings are unmaintained, and this
is one call.
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_DUMPABLE = 4


def make_undumpable() -> bool:
    """Clear this process's dumpable flag; True when done (Linux), False elsewhere or refused."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc prctl (musl without it): nothing to clear
        return False
