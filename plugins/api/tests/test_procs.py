"""The API's own children are alive to it from the moment start() returns, whatever /proc says
then, and only for the job whose marker their argv names."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from bashgym_api import procs


def test_an_own_child_is_alive_before_proc_shows_its_command_line(tmp_path, monkeypatch):
    marker = str(tmp_path / "job-a")
    pid = procs.start(["sh", "-c", "sleep 30", marker], tmp_path / "log")  # $0 names the job
    real_read = Path.read_bytes

    def unreadable_cmdline(self: Path) -> bytes:  # the window right after exec: empty cmdline
        if self.name == "cmdline":
            return b""
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", unreadable_cmdline)
    try:
        assert procs.alive(pid, marker)
        assert not procs.alive(pid, str(tmp_path / "job-b"))  # another job's stale pid file
    finally:
        monkeypatch.undo()
        procs.stop_group(pid, marker, grace=0.5)
    deadline = time.monotonic() + 10
    while procs.alive(pid, marker):
        assert time.monotonic() < deadline, "a stopped child still counts as alive"
        time.sleep(0.05)


@pytest.mark.parametrize("pid", [None, 0])
def test_no_pid_is_not_alive(pid):
    assert not procs.alive(pid, "anything")
