"""Child processes: whole groups stopped at the deadline and on cancel, output kept in bounds,
limits applied, and children that die with their parent."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import bashgym_procs as procs
import pytest


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as fh:  # a zombie not yet reaped counts as gone
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_timeout_stops_the_whole_group(tmp_path):
    pidfile = tmp_path / "grandchild"
    script = f"sleep 300 & echo $! > {pidfile}; wait"
    done = asyncio.run(procs.run(["bash", "-c", script], timeout=1))
    assert done.timed_out and done.exit_code is None and done.reason == "timed out after 1s"
    assert _wait_gone(int(pidfile.read_text()))


def test_cancellation_stops_the_group(tmp_path):
    pidfile = tmp_path / "child"

    async def main() -> None:
        task = asyncio.create_task(
            procs.run(["bash", "-c", f"echo $$ > {pidfile}; sleep 300"], timeout=None)
        )
        while not pidfile.is_file() or not pidfile.read_text().strip():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _wait_gone(int(pidfile.read_text()))


def test_output_keeps_head_and_tail_and_a_flood_is_stopped():
    done = asyncio.run(procs.run(["bash", "-c", "seq 1 100000"], output_limit=10_000))
    assert done.ok and done.truncated
    assert done.output.startswith("1\n2\n") and done.output.rstrip().endswith("100000")
    assert "bytes of output left out" in done.output
    flood = asyncio.run(procs.run(["bash", "-c", "yes"], output_limit=1000, timeout=30))
    assert flood.exit_code is None and flood.reason == "output over 100,000 bytes: stopped"


def test_limits_and_signals_are_said_plainly(tmp_path):
    limits = procs.Limits(file_size_mb=1)
    big = asyncio.run(
        procs.run(["bash", "-c", f"head -c 5000000 /dev/zero > {tmp_path}/f"], limits=limits)
    )
    assert not big.ok
    assert (tmp_path / "f").stat().st_size <= 1024 * 1024
    killed = asyncio.run(procs.run(["bash", "-c", "kill -9 $$"]))
    assert killed.reason == "killed by SIGKILL" and killed.exit_code is None
    echoed = asyncio.run(procs.run(["cat"], stdin=b"hello"))
    assert echoed.ok and echoed.output == "hello" and echoed.reason == "exited 0"


def test_a_spawned_child_dies_with_its_parent(tmp_path):
    code = textwrap.dedent("""
        import time
        import bashgym_procs as procs
        child = procs.spawn(["sleep", "300"])
        print(child.pid, flush=True)
        time.sleep(300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert _wait_gone(child)


def test_stop_terms_then_kills_a_stubborn_group():
    proc = procs.spawn(["bash", "-c", "trap '' TERM; sleep 300"])
    time.sleep(0.2)
    started = time.monotonic()
    procs.stop(proc, grace=0.5)
    assert proc.poll() is not None and time.monotonic() - started < 10


def test_a_run_child_dies_with_its_parent(tmp_path):
    """`run` sets the death signal without a preexec_fn (setpriv): still dies with us."""
    pidfile = tmp_path / "child"
    code = textwrap.dedent(f"""
        import asyncio
        import bashgym_procs as procs
        asyncio.run(procs.run(["bash", "-c", "echo $$ > {pidfile}; exec sleep 300"]))
    """)
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not (pidfile.is_file() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.02)
    child = int(pidfile.read_text())
    assert not _gone(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert _wait_gone(child)


def test_a_missing_program_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        asyncio.run(procs.run(["bashgym-no-such-program-here"]))
    with pytest.raises(FileNotFoundError):
        asyncio.run(procs.run([str(tmp_path / "absent")]))
    done = asyncio.run(procs.run(["printf", "%s", "a b"], env={"PATH": os.environ["PATH"]}))
    assert done.ok and done.output == "a b"
