"""The attack list, run in every environment with real processes: network, writes outside the
workspace, secrets, a fork bomb, a memory bomb, an infinite loop, symlink escapes, a flood of
output. Each is contained and its Completed says why; where `local` cannot contain something
(its own writes and reads), the test asserts what its docstring says it does instead, and the
bubblewrap test asserts containment.

Bombs run only when their containment is in place (a pids cgroup, or RLIMIT_NPROC for a
non-root user; a memory cgroup or RLIMIT_AS), with tiny limits and short timeouts: the machine
is shared and must not go down.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bashgym_environments_bubblewrap import BubblewrapEnvironment, why_not
from bashgym_environments_local import LocalEnvironment

from bashgym.contracts import InputError, PathError

ENVIRONMENTS = {"local": LocalEnvironment, "bubblewrap": BubblewrapEnvironment}
TINY = {"timeout_s": 10, "processes": 32, "memory_mb": 128, "output_limit": 2000}
PY = shlex.quote(sys.executable)


@pytest.fixture(params=sorted(ENVIRONMENTS))
def env_name(request: pytest.FixtureRequest) -> str:
    if request.param == "bubblewrap":
        why = why_not()
        if why is not None and "not installed" in why:
            pytest.skip("needs bwrap (Debian package bubblewrap)")
        if why is not None:
            pytest.skip(f"needs bwrap that can create namespaces here: {why}")
    return request.param


class Attack:
    """One open session, with its results kept for the assertions."""

    def __init__(self, name: str, workspace: Path, **options: Any) -> None:
        self.name, self.workspace = name, workspace
        self.environment = ENVIRONMENTS[name]()
        self.options = self.environment.Options(**{**TINY, **options})

    def run(self, *commands: str, timeout: float | None = None, inspect=None) -> list[Any]:
        async def go():
            async with self.environment.open(self.workspace, self.options) as session:
                self.described = session.describe()
                self.notes = session.notes
                self.cage = session.cage
                if inspect is not None:
                    inspect(session)
                return [await session.run(c, timeout=timeout) for c in commands]

        return asyncio.run(go())

    def holds(self, concern: str, words: str) -> bool:
        """Whether the session says `concern: ...words...` about itself."""
        return any(line.startswith(f"{concern}:") and words in line for line in self.described)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 in this (host) process, recording what reaches it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)  # so the loop sees `done` soon after the test
    got: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                got.append(conn.recv(100))
                conn.sendall(b"ok")  # after recording: the client waits for it

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    done.set()
    thread.join(timeout=5)
    server.close()


def connect(host: str, port: int) -> str:
    code = (
        "import socket\n"
        f"s = socket.create_connection(({host!r}, {port}), timeout=3)\n"
        "s.sendall(b'hello from the sandbox'); s.recv(2); s.close(); print('CONNECTED')\n"
    )
    return f"{PY} -c {shlex.quote(code)}"


# -- network ------------------------------------------------------------------------------------


def without_network(attack: Attack, *commands: str) -> list[Any]:
    """Run with network = false; where local cannot cut it here, it refuses (said, then skip)."""
    try:
        return attack.run(*commands)
    except InputError as exc:
        assert attack.name == "local" and "cannot cut the network here" in str(exc)
        pytest.skip(f"needs a network namespace (unshare --net): {exc}")


def test_no_connection_reaches_a_server_on_the_host(env_name, tmp_path, listener) -> None:
    port, got = listener
    attack = Attack(env_name, tmp_path, network=False)
    (done,) = without_network(attack, connect("127.0.0.1", port))
    assert attack.holds("network", "cut")
    assert done.exit_code == 1 and "CONNECTED" not in done.output
    assert "ConnectionRefusedError" in done.output or "Network is unreachable" in done.output
    assert got == []


def test_no_outbound_route_exists(env_name, tmp_path) -> None:
    attack = Attack(env_name, tmp_path, network=False)
    interfaces, outbound = without_network(
        attack, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", connect("192.0.2.1", 80)
    )
    assert interfaces.output.split() == ["lo"]  # the host's interfaces are not there
    assert "Network is unreachable" in outbound.output and "CONNECTED" not in outbound.output


def test_the_network_by_default(env_name, tmp_path, listener) -> None:
    """bubblewrap: none. local: the host's (documented: an agent started in it must reach its
    model), and it says so."""
    port, got = listener
    attack = Attack(env_name, tmp_path)
    (done,) = attack.run(connect("127.0.0.1", port))
    if env_name == "local":
        assert attack.holds("network", "ON (the host's")
        assert "CONNECTED" in done.output and got == [b"hello from the sandbox"]
    else:
        assert attack.holds("network", "cut") and "CONNECTED" not in done.output and got == []


def test_network_can_be_allowed(env_name, tmp_path, listener) -> None:
    port, got = listener
    (done,) = Attack(env_name, tmp_path, network=True).run(connect("127.0.0.1", port))
    assert done.exit_code == 0 and "CONNECTED" in done.output
    assert got == [b"hello from the sandbox"]


# -- files ---------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Places a command must not write to: beside the workspace (under /tmp), a folder outside
    /tmp, the user's home, and /dev/shm; all removed after."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    elsewhere = Path(tempfile.mkdtemp(prefix="bashgym-attack-", dir="/var/tmp"))
    shm = Path("/dev/shm") / f"bashgym-attack-{uuid.uuid4().hex[:8]}"
    places = {"beside": tmp_path / "beside", "elsewhere": elsewhere, "home": home, "shm": shm}
    places["beside"].mkdir()
    yield places
    for path in (elsewhere / "f", shm):
        path.unlink(missing_ok=True)
    elsewhere.rmdir()


def test_writes_outside_the_workspace(env_name, tmp_path, outside) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    targets = [outside["beside"] / "f", outside["elsewhere"] / "f", outside["home"] / "f"]
    command = "; ".join(f"echo pwned > {shlex.quote(str(t))}" for t in targets)
    command += f"; echo pwned > {shlex.quote(str(outside['shm']))}; echo home > ~/f; true"
    (done,) = Attack(env_name, workspace).run(command)
    assert (workspace / "f").read_text() == "home\n"  # ~ is the workspace
    written = [t for t in [*targets, outside["shm"]] if t.exists()]
    if env_name == "local":  # documented: local does not contain a command's own writes
        assert written == [*targets, outside["shm"]]
    else:
        assert written == []
        assert "Read-only file system" in done.output  # /var/tmp and home: read-only


def test_the_system_is_read_only_and_no_capability_is_held(tmp_path) -> None:
    if (why := why_not()) is not None:
        pytest.skip("needs bwrap (Debian package bubblewrap)" if "installed" in why else why)
    attack = Attack("bubblewrap", tmp_path)
    caps, remount, cgroup = attack.run(
        "grep CapEff /proc/self/status",
        "mount -o remount,rw / 2>&1; touch /usr/bashgym-attack 2>&1",
        "mkdir /sys/fs/cgroup/pids/bashgym-attack 2>&1",
    )
    assert caps.output.split() == ["CapEff:", "0000000000000000"]
    assert remount.exit_code != 0 and not Path("/usr/bashgym-attack").exists()
    assert "mount: /: " in remount.output  # refused: "permission denied" / "must be superuser"
    assert "Read-only file system" in remount.output
    assert cgroup.exit_code != 0 and "Read-only file system" in cgroup.output


# -- secrets -------------------------------------------------------------------------------------


def test_secrets_in_the_parent_environment_and_home_are_out_of_reach(
    env_name, tmp_path, monkeypatch
) -> None:
    key = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key)
    home = Path(tempfile.mkdtemp(prefix="bashgym-attack-home-", dir="/var/tmp"))
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    monkeypatch.setenv("HOME", str(home))
    # a process started with the key in its environment, as BashGym itself is: its
    # /proc/PID/environ holds the key from exec on
    holder = subprocess.Popen(["sleep", "60"], env={**os.environ, "OPENAI_API_KEY": key})
    try:
        attack = Attack(env_name, tmp_path)
        env, procs, ssh = attack.run(
            "env",
            "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep sk-test- || true",
            f"cat {shlex.quote(str(home))}/.ssh/id_ed25519",
        )
    finally:
        holder.kill()
        holder.wait()
        shutil.rmtree(home)
    assert key not in env.output and "OPENAI_API_KEY" not in env.output
    if env_name == "local" and not attack.holds("processes", "own PID namespace"):
        assert key in procs.output  # documented: without a PID namespace, /proc shows it
    else:
        assert key not in procs.output
    if env_name == "local":  # documented: local hides no files from reads
        assert ssh.output == "PRIVATE KEY of the user\n"
    else:
        assert "PRIVATE KEY" not in ssh.output and ssh.exit_code != 0


# -- processes and resources ---------------------------------------------------------------------


def test_a_fork_bomb_is_held_at_the_process_limit(env_name, tmp_path) -> None:
    attack = Attack(env_name, tmp_path, processes=32)
    (probe,) = attack.run("true")
    if not (attack.holds("processes", "pids cgroup") or attack.holds("processes", "NPROC")):
        pytest.skip(f"needs a pids cgroup or a non-root user to hold a fork bomb: {attack.notes}")
    bomb, after = attack.run(":(){ :|:& };:; sleep 30", "echo alive", timeout=3)
    assert probe.ok
    if attack.holds("processes", "pids cgroup"):
        assert bomb.timed_out and bomb.reason == "timed out after 3s; process limit (32) reached"
    else:  # RLIMIT_NPROC: forks fail the same, but no counter says so in the reason
        assert bomb.timed_out and "Resource temporarily unavailable" in bomb.output
    assert after.output == "alive\n"  # the session (and the machine) still work


def test_a_memory_bomb_is_held_at_the_memory_limit(env_name, tmp_path) -> None:
    attack = Attack(env_name, tmp_path, memory_mb=128)
    bomb = f"{PY} -c 'b = bytearray(1024 ** 3); print(\"ALLOCATED\", len(b))'"
    (done,) = attack.run(bomb)
    assert "ALLOCATED" not in done.output and done.exit_code != 0
    if attack.holds("memory", "memory cgroup"):
        assert done.exit_code == 137 and "memory limit (128 MB) reached" in done.reason
    else:
        assert attack.holds("memory", "RLIMIT_AS") and "MemoryError" in done.output


def test_an_infinite_loop_is_stopped_at_the_timeout(env_name, tmp_path) -> None:
    (done,) = Attack(env_name, tmp_path).run("while :; do :; done", timeout=1)
    assert done.timed_out and done.exit_code is None
    assert done.reason == "timed out after 1s"


def test_a_flood_of_output_is_cut_and_stopped(env_name, tmp_path) -> None:
    cut, flood = Attack(env_name, tmp_path).run(
        "seq 1 20000; echo LAST", "cat /dev/zero", timeout=30
    )
    assert cut.ok and cut.truncated and len(cut.output) < 2200
    assert cut.output.startswith("1\n2\n") and cut.output.endswith("20000\nLAST\n")
    assert flood.exit_code is None and flood.truncated and not flood.timed_out
    assert flood.reason.startswith("output over")


def test_other_processes_are_invisible(env_name, tmp_path) -> None:
    attack = Attack(env_name, tmp_path)
    (done,) = attack.run(f"test -e /proc/{os.getpid()} && echo SEES-BASHGYM; ps -e | wc -l")
    if env_name == "local" and not attack.holds("processes", "own PID namespace"):
        assert "SEES-BASHGYM" in done.output  # documented: shared with the host
        return
    assert "SEES-BASHGYM" not in done.output and int(done.output.split()[-1]) <= 6


# -- symlinks ------------------------------------------------------------------------------------


def test_symlinks_out_of_the_workspace(env_name, tmp_path) -> None:
    workspace, secret_dir = tmp_path / "ws", tmp_path / "beside"
    workspace.mkdir()
    secret_dir.mkdir()
    (secret_dir / "x").write_text("outside\n")
    (workspace / "link").symlink_to(secret_dir)
    (workspace / "file-link").symlink_to(secret_dir / "x")
    refused: list[str] = []

    def file_operations(session) -> None:
        for op in (
            lambda: session.workspace.read("link/x"),
            lambda: session.workspace.read("file-link"),
            lambda: session.workspace.write("link/new", "x"),
            lambda: session.workspace.edit("file-link", "outside", "changed"),
            lambda: session.workspace.read(str(secret_dir / "x")),
            lambda: session.workspace.read("../beside/x"),
        ):
            with pytest.raises(PathError, match="outside the workspace"):
                op()
            refused.append("refused")

    read, write = Attack(env_name, workspace).run(
        "cat link/x", "echo changed > link/x", inspect=file_operations
    )
    assert len(refused) == 6 and (secret_dir / "x").exists()
    assert not (secret_dir / "new").exists()
    if env_name == "local":  # documented: a command itself may follow links anywhere
        assert read.output == "outside\n" and (secret_dir / "x").read_text() == "changed\n"
    else:
        assert read.exit_code != 0 and "outside" not in read.output
        assert write.exit_code != 0 and (secret_dir / "x").read_text() == "outside\n"
