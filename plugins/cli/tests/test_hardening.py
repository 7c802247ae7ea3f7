"""The CLI's process is not dumpable, so a command it starts cannot read its environment."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

PROBE = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys
    from bashgym_cli import main
    control = sys.argv[-1] == "control"
    sys.argv = ["bashgym", "--version"]
    if not control:
        try:
            main()
        except SystemExit:
            pass
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    # a child of the same user, as a task's command would be, tries BashGym's environ
    child = subprocess.run(["cat", f"/proc/{os.getpid()}/environ"], capture_output=True)
    print(dumpable, b"sk-ant-hardening" in child.stdout, child.returncode != 0)
    """
)


def probe(*args: str) -> list[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-hardening-0123456789"}
    # as root, the probe (BashGym) and its child hold no capabilities, like a plain user: a
    # root child could read any environ with CAP_SYS_PTRACE, whatever the flag
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all"]
    argv = [*(drop if os.getuid() == 0 else []), sys.executable, "-c", PROBE, *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-3:]


def test_main_clears_the_dumpable_flag_and_hides_the_environment():
    assert probe("control") == ["1", "True", "False"]  # without main(): the key is readable
    assert probe() == ["0", "False", "True"]
