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


def test_a_stop_before_the_command_starts_is_one_line_exit_130():
    """SIGTERM while the CLI still imports Typer and its command index (an API job cancelled at
    once) printed a KeyboardInterrupt traceback into the job's log. The signal is sent from inside
    the index loading here, so it lands there every time."""
    import subprocess
    import sys

    script = (
        "import os, signal, sys, bashgym_cli, bashgym_cli.index as index\n"
        "real = index.lazy_app\n"
        "def stopped():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real()\n"
        "index.lazy_app = stopped\n"
        "sys.argv = ['bashgym', '--help']\n"
        "bashgym_cli.main()\n"
    )
    argv = [sys.executable, "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "interrupted (SIGTERM) before the command started"
