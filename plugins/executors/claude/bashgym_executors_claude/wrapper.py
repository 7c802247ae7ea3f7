"""A one-task launcher script the Agent SDK starts in place of `claude`.

The SDK spawns the CLI itself (`ClaudeAgentOptions.cli_path`), in BashGym's process group and
with BashGym's whole environment, and on close waits up to 15 s before it kills only that one
process. An executor must instead run `claude` inside the task's environment, stop its whole
group at the deadline, and never leave it behind. So `cli_path` points at this small script: it
puts itself in a new session (its pid is the group id, written to a file for `stop`), sets the
death signal, and execs the environment's argv with the environment's env — keeping only the
variables the SDK itself adds (`CLAUDE_*`, e.g. CLAUDE_CODE_ENTRYPOINT=sdk-py).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import bashgym_procs as procs

SCRIPT = """\
#!{python}
import ctypes, json, os, sys
os.setsid()
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
spec = json.load(open({spec!r}))
os.unlink({spec!r})  # it holds the API key: gone once read, even if BashGym is killed -9
with open({pid!r} + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.replace({pid!r} + ".tmp", {pid!r})
env = dict(spec["env"])
env.update((k, v) for k, v in os.environ.items() if k.startswith("CLAUDE"))
os.execve(spec["argv"][0], spec["argv"] + sys.argv[1:], env)
"""


class Launcher:
    """Writes the script for `argv` + `env`; `stop()` ends the whole group it started."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="bashgym-claude-"))
        self.pid_file = self.folder / "pid"
        spec = self.folder / "spec.json"
        spec.write_text(json.dumps({"argv": argv, "env": env}))
        spec.chmod(0o600)  # it holds the API key
        self.path = self.folder / "claude"
        self.path.write_text(
            SCRIPT.format(python=sys.executable, spec=str(spec), pid=str(self.pid_file))
        )
        self.path.chmod(0o700)

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text())
        except (OSError, ValueError):
            return None

    async def stop(self, done: asyncio.Future[object] | None, grace: float) -> None:
        """TERM the group, give it `grace` s (or until `done`), then KILL what is left."""
        pid = self.pid
        if pid is None:
            return
        procs.signal_group(pid, signal.SIGTERM)
        if done is not None and not done.done():
            await asyncio.wait({done}, timeout=grace)
        procs.signal_group(pid, signal.SIGKILL)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
