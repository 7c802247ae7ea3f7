"""A stand-in for the BashGym process, for the attack tests: started with a secret in its own
environment block (as BashGym is, with API keys), optionally on a terminal it controls, it opens
a `local` session, runs the commands it is given and prints what happened as JSON.

Why a separate process: the attacks target the process that runs the session (its
/proc/PID/environ, its terminal, its signals). pytest's own environment block cannot be given
a key after it started (`os.environ` changes do not reach /proc/PID/environ), pytest has no
terminal here, and a signal that escaped must not hit the test runner.

    python host.py SPEC_JSON    # {"commands": [...], "options": {...}, "tty": bool,
                                #  "careless_argv": "command" or null,
                                #  "no_namespaces": bool (as where unshare cannot work)}

In every command, {HOST} is this process's pid and {PTS} the path of its terminal.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import tty
from pathlib import Path

from bashgym_environments_local import LocalEnvironment, LocalOptions
from bashgym_environments_local import environment as local_environment


def take_a_terminal() -> tuple[int, str]:
    """Make a new pty this process's controlling terminal, in raw mode (so a byte pushed into
    its input by TIOCSTI can be read at once); return its slave fd and path."""
    master, slave = pty.openpty()
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    tty.setraw(slave)
    os.set_blocking(slave, False)
    _keep.append(master)
    return slave, os.ttyname(slave)


_keep: list[int] = []


def typed_into(slave: int) -> str:
    """What was pushed into the terminal's input (by TIOCSTI), if anything."""
    got = b""
    while select.select([slave], [], [], 0.2)[0]:
        try:
            chunk = os.read(slave, 4096)
        except BlockingIOError:
            break
        if not chunk:
            break
        got += chunk
    return got.decode(errors="replace")


async def main(spec: dict) -> dict:
    if spec.get("no_namespaces"):
        local_environment.try_unshare = lambda *_: "no namespaces (host.py was told so)"
    slave, pts = take_a_terminal() if spec.get("tty") else (-1, "")
    signals: list[int] = []
    signal.signal(signal.SIGUSR1, lambda sig, _frame: signals.append(sig))
    fill = {"{HOST}": str(os.getpid()), "{PTS}": pts}

    def filled(command: str) -> str:
        for key, value in fill.items():
            command = command.replace(key, value)
        return command

    out: dict = {"pid": os.getpid(), "results": []}
    workspace = Path(spec["workspace"])
    options = LocalOptions(**spec.get("options", {}))
    async with LocalEnvironment().open(workspace, options) as session:
        out["notes"], out["described"] = list(session.notes), session.describe()
        for command in spec.get("commands", []):
            done = await session.run(filled(command))
            out["results"].append(
                {"exit_code": done.exit_code, "output": done.output, "reason": done.reason}
            )
        if spec.get("careless_argv"):  # a caller that forgets to start it in a new session
            argv, env = session.argv(["/bin/bash", "-c", filled(spec["careless_argv"])])
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
            out["careless"] = {"exit_code": done.returncode, "output": done.stdout + done.stderr}
    out["typed"] = typed_into(slave) if slave >= 0 else ""
    out["signals"] = len(signals)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
