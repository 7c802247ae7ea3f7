"""The attack list against `local`: each attack runs a real command through the environment and
asserts what `local` claims about it (the package docstring and `describe()`). Where local does
not contain something by design, the test asserts the documented behaviour and that
`describe()` says so.

    id   attack                                                   local's claim
    F1   file tools: ../, absolute path, symlink out (dir, file)  refused (PathError)
    F2   a command writes beside the workspace, in /var/tmp       NOT contained (documented)
    S1   `env` in the command                                      no API key
    S2   /proc/<BashGym>/environ, /proc/$PPID, /proc/1, /proc/*    no API key
    S2b  the same without namespaces, as root and as a plain user  no API key (BashGym is not
                                                                   dumpable)
    S3   `umount /proc` (also -l, also from a new user namespace),  umount refused; no API key
         then /proc/<BashGym>/environ
    S4   signals to BashGym (USR1, then KILL)                      never delivered (PID ns)
    S5   TIOCSTI on /dev/tty and on BashGym's terminal by path     refused: no terminal, no
                                                                   CAP_SYS_ADMIN
    S6   a worker started through `argv` in BashGym's session      refused: it must be started
         (so it has BashGym's terminal)                            in a new session
    P1   capabilities and no_new_privs of a command run as root    none held; no_new_privs set
    P2   mount a tmpfs; set the hostname (to its current value)    refused
    P3   write sysctls / sysrq (core_pattern: access check only;   read-only
         domainname: its current value written back)
    P4   leave the session cgroup, raise its pids.max              refused
    B1   fork bomb                                                 held at `processes`
    B2   memory bomb                                               held at `memory_mb`
    T1   infinite loop                                             stopped at the timeout
    T2   setsid / nohup / double-fork children                     gone when the command ends
    O1   a flood of output                                         cut, and stopped at 100x
    D1   network                                                   ON by default (documented)
    D2   /etc/shadow as root                                       readable (documented)

Harmless by construction: nothing here changes a host setting even where an attack gets
through (a hostname or domainname is written back unchanged, core_pattern and sysrq-trigger
are only checked with access(2), the cgroup a command moves to is BashGym's own), and attacks on
the BashGym process target a stand-in (`host.py`), never the test runner. Attacks that need
root (P*, S3) or a PID namespace skip where they do not apply.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from bashgym_environments_local import LocalEnvironment, LocalOptions
from bashgym_sandbox.cgroups import hierarchies
from bashgym_testing import SessionProbe

from bashgym.contracts import PathError

HOST = Path(__file__).with_name("host.py")
TINY = {"timeout_s": 10, "processes": 64, "memory_mb": 256, "output_limit": 2000}
PY = shlex.quote(sys.executable)
ROOT = os.geteuid() == 0


class Session(SessionProbe):
    """One local session (in this process), with the attack tests' tight limits."""

    def __init__(self, workspace: Path, **options: Any) -> None:
        super().__init__(LocalEnvironment(), workspace, LocalOptions(**{**TINY, **options}))


def on_host(
    workspace: Path, secret: str = "", *, as_user: int | None = None, **spec: Any
) -> dict[str, Any]:
    """Run `spec` in a stand-in BashGym process (host.py) with `secret` as its
    ANTHROPIC_API_KEY, in its original environment block as a real key would be; as uid
    `as_user` if given (root only)."""
    env = {**os.environ, "ANTHROPIC_API_KEY": secret} if secret else dict(os.environ)
    spec = {"workspace": str(workspace), "options": TINY, **spec}
    user = [] if as_user is None else ["setpriv", f"--reuid={as_user}", f"--regid={as_user}",
                                       "--clear-groups"]  # fmt: skip
    done = subprocess.run(
        [*user, sys.executable, str(HOST), json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"the stand-in BashGym died ({done.returncode}): {done.stderr}"
    return json.loads(done.stdout)


def pid_namespace(described: list[str]) -> bool:
    return any(line.startswith("processes: own PID namespace") for line in described)


# -- F: files ------------------------------------------------------------------------------------


def test_F1_file_tools_refuse_every_path_out_of_the_workspace(tmp_path: Path) -> None:
    workspace, beside = tmp_path / "ws", tmp_path / "beside"
    workspace.mkdir()
    beside.mkdir()
    (beside / "x").write_text("outside\n")
    (workspace / "dir-link").symlink_to(beside)
    (workspace / "file-link").symlink_to(beside / "x")
    refused: list[str] = []

    def attack(session) -> None:
        ws = session.workspace
        for name, op in {
            "read ../": lambda: ws.read("../beside/x"),
            "read absolute": lambda: ws.read(str(beside / "x")),
            "read dir link": lambda: ws.read("dir-link/x"),
            "read file link": lambda: ws.read("file-link"),
            "write ../": lambda: ws.write("../beside/new", "x"),
            "write absolute": lambda: ws.write(str(beside / "new"), "x"),
            "write dir link": lambda: ws.write("dir-link/new", "x"),
            "edit file link": lambda: ws.edit("file-link", "outside", "changed"),
            "list /": lambda: ws.listing("/"),
            "search ..": lambda: ws.search("outside", path=".."),
        }.items():
            with pytest.raises(PathError, match="outside the workspace"):
                op()
            refused.append(name)
        assert "outside" not in ws.search("outside")  # links out are not followed

    Session(workspace).run(inspect=attack)
    assert len(refused) == 10
    assert (beside / "x").read_text() == "outside\n" and not (beside / "new").exists()


def test_F2_a_command_writes_outside_the_workspace_as_documented(tmp_path: Path) -> None:
    workspace, beside = tmp_path / "ws", tmp_path / "beside"
    workspace.mkdir()
    beside.mkdir()
    session = Session(workspace)
    (done,) = session.run(f"echo written > {shlex.quote(str(beside / 'f'))}")
    assert done.ok and (beside / "f").read_text() == "written\n"  # documented: NOT contained
    assert session.holds("files", "writes outside the workspace are NOT contained")


# -- S: secrets, signals, the terminal -----------------------------------------------------------


def test_S1_S2_S3_no_api_key_reaches_a_command(tmp_path: Path) -> None:
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    got = on_host(
        tmp_path,
        key,
        commands=[
            "env",
            "cat /proc/{HOST}/environ; cat /proc/$PPID/environ; cat /proc/1/environ",
            "cat /proc/*/environ | tr '\\0' '\\n' | grep sk-ant-test; true",
            "umount /proc && echo UMOUNTED; cat /proc/{HOST}/environ",
            "umount -l /proc && echo UMOUNTED; cat /proc/{HOST}/environ",
            # a new user namespace gives capabilities back, over copies of the mounts only
            "unshare -U -m sh -c 'umount -l /proc && echo UMOUNTED; cat /proc/{HOST}/environ'",
        ],
    )
    env, direct, every, umount, lazy, nested = (r["output"] for r in got["results"])
    assert "ANTHROPIC_API_KEY" not in env and key not in env  # S1
    assert key not in direct and key not in every  # S2
    assert key not in umount and key not in lazy and key not in nested  # S3
    if ROOT and pid_namespace(got["described"]):
        assert "UMOUNTED" not in umount + lazy + nested
    assert any(line.startswith("secrets:") for line in got["described"])


@pytest.mark.parametrize("user", ["self", "nobody"])
def test_S2b_without_namespaces_bashgyms_environment_stays_unreadable(
    tmp_path: Path, user: str
) -> None:
    """Where unshare cannot work (no PID namespace), a command shares /proc with BashGym and
    runs as its user: only BashGym being non-dumpable keeps /proc/PID/environ closed."""
    as_user = None
    if user == "nobody":
        if not ROOT or not shutil.which("setpriv"):
            pytest.skip("runs the stand-in as uid 65534: needs root and setpriv")
        as_user = 65534
    workspace = Path(tempfile.mkdtemp(prefix="bashgym-attack-"))
    workspace.chmod(0o777)
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    try:
        got = on_host(
            workspace,
            key,
            as_user=as_user,
            no_namespaces=True,
            options={**TINY, "memory_mb": None, "processes": None},
            commands=[
                "cat /proc/{HOST}/environ; cat /proc/$PPID/environ; "
                "cat /proc/{HOST}/mem 2>&1 | head -c 100; echo",
            ],
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    (done,) = got["results"]
    assert not pid_namespace(got["described"])
    assert key not in done["output"] and "Permission denied" in done["output"]
    assert any(line.startswith("secrets: BashGym's process is not dumpable")
               for line in got["described"])  # fmt: skip


def test_S4_no_signal_reaches_bashgym(tmp_path: Path) -> None:
    got = on_host(tmp_path, commands=["kill -USR1 {HOST}; kill -KILL {HOST}; echo sent"])
    (done,) = got["results"]  # the stand-in survived: on_host asserts it exited 0
    if not pid_namespace(got["described"]):  # documented: shared with the host
        pytest.skip("needs a PID namespace: without one a command can signal BashGym")
    assert got["signals"] == 0 and "No such process" in done["output"]


def test_S5_S6_no_keystroke_reaches_bashgyms_terminal(tmp_path: Path) -> None:
    inject = (
        "import fcntl, os, termios\n"
        "for path in ('/dev/tty', '{PTS}'):\n"
        "    try:\n"
        "        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)\n"
        "    except OSError as e:\n"
        "        print(path, 'open', e.strerror); continue\n"
        "    try:\n"
        "        for b in b'echo INJECTED\\n': fcntl.ioctl(fd, termios.TIOCSTI, bytes([b]))\n"
        "        print(path, 'TYPED')\n"
        "    except OSError as e:\n"
        "        print(path, 'ioctl', e.strerror)\n"
    )
    command = f"{PY} -c {shlex.quote(inject)}"
    got = on_host(tmp_path, tty=True, commands=[command], careless_argv=command)
    (done,) = got["results"]
    assert "TYPED" not in done["output"], done["output"]  # S5
    assert "/dev/tty open" in done["output"]  # no controlling terminal
    assert "TYPED" not in got["careless"]["output"], got["careless"]  # S6
    assert got["careless"]["exit_code"] == 125 and "new session" in got["careless"]["output"]
    assert "INJECTED" not in got["typed"]


# -- P: privileges (root) ------------------------------------------------------------------------

needs_root = pytest.mark.skipif(not ROOT, reason="the privilege attacks are for a root BashGym")


@needs_root
def test_P1_a_command_run_as_root_holds_no_capability(tmp_path: Path) -> None:
    session = Session(tmp_path)
    (status,) = session.run("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "
                            "/proc/self/status")  # fmt: skip
    held = dict(line.split(":\t") for line in status.output.splitlines())
    assert {k: v.strip() for k, v in held.items()} == {
        **{k: "0000000000000000" for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
        "NoNewPrivs": "1",
    }
    assert session.holds("privileges", "no capabilities")


@needs_root
def test_P2_mount_and_hostname_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "mnt"
    target.mkdir()
    mount, hostname = Session(tmp_path).run(
        f"mount -t tmpfs none {shlex.quote(str(target))} && echo MOUNTED",
        'hostname "$(hostname)" && echo RENAMED',  # the current name: nothing changes
    )
    assert "MOUNTED" not in mount.output and mount.exit_code != 0
    assert "RENAMED" not in hostname.output and hostname.exit_code != 0


@needs_root
def test_P3_kernel_settings_are_read_only(tmp_path: Path) -> None:
    session = Session(tmp_path)
    (done,) = session.run(
        "for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger /proc/sys/vm/drop_caches; do"
        "  test -w $f && echo WRITABLE $f; done; "  # access(2) only: nothing is written
        "cat /proc/sys/kernel/domainname > /proc/sys/kernel/domainname && echo WROTE; true"
    )
    if not pid_namespace(session.described):
        pytest.skip("needs namespaces: without them a root command can write sysctls")
    assert "WRITABLE" not in done.output and "WROTE" not in done.output, done.output


@needs_root
def test_P4_a_command_cannot_leave_or_loosen_its_cgroup(tmp_path: Path) -> None:
    h = hierarchies().get("pids")
    if h is None:
        pytest.skip("needs a pids cgroup hierarchy")
    own = shlex.quote(str(h.own))  # BashGym's own cgroup: the cage is a child of it
    session = Session(tmp_path)
    (done,) = session.run(
        "cage=$(grep ':pids:' /proc/self/cgroup | grep -o 'bashgym-[^/]*$'); "
        f"echo $$ > {own}/cgroup.procs && echo LEFT; "
        f"cat {own}/$cage/pids.max > {own}/$cage/pids.max && echo LOOSENED; "
        "grep -c ':pids:.*bashgym-' /proc/self/cgroup"
    )
    if session.cage is None or "pids" not in session.cage.dirs:
        pytest.skip(f"needs a pids cgroup: {session.notes}")
    assert "LEFT" not in done.output and "LOOSENED" not in done.output, done.output
    assert done.output.split()[-1] == "1"  # still in its cage


# -- B: bombs ------------------------------------------------------------------------------------


def test_B1_a_fork_bomb_is_held(tmp_path: Path) -> None:
    session = Session(tmp_path, processes=32)
    bomb, after = session.run(":(){ :|:& };:; sleep 30", "echo alive", timeout=3)
    if not (session.holds("processes", "pids cgroup") or session.holds("processes", "NPROC")):
        pytest.skip(f"needs a pids cgroup or a non-root user: {session.notes}")
    assert bomb.timed_out and after.output == "alive\n"
    if session.holds("processes", "pids cgroup"):
        assert bomb.reason == "timed out after 3s; process limit (32) reached"


def test_B2_a_memory_bomb_is_held(tmp_path: Path) -> None:
    session = Session(tmp_path, memory_mb=128)
    (done,) = session.run(f"{PY} -c 'b = bytearray(1024 ** 3); print(\"ALLOCATED\")'")
    assert "ALLOCATED" not in done.output and done.exit_code != 0
    if session.holds("memory", "memory cgroup"):
        assert "memory limit (128 MB) reached" in done.reason


# -- T: time -------------------------------------------------------------------------------------


def survivors(marker: str) -> list[int]:
    """Host processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_T1_an_infinite_loop_is_stopped(tmp_path: Path) -> None:
    (done,) = Session(tmp_path).run("while :; do :; done", timeout=1)
    assert done.timed_out and done.reason == "timed out after 1s"


def test_T2_children_that_hide_die_with_the_command(tmp_path: Path) -> None:
    marker = f"bashgym-attack-{uuid.uuid4().hex[:8]}"
    sleeper = f"{PY} -c 'import time; time.sleep(300)' {marker}"
    hide = f"setsid {sleeper} & nohup {sleeper} >/dev/null 2>&1 & ( ( {sleeper} & ) & ); "
    session = Session(tmp_path)
    ended, stopped = session.run(f"{hide} echo started", f"{hide} sleep 60", timeout=2)
    after_close = survivors(marker)
    for pid in after_close:  # never leave them on the machine, whatever the outcome
        os.kill(pid, 9)
    assert ended.ok and stopped.timed_out
    if pid_namespace(session.described) or session.cage is not None:
        assert after_close == []  # with a PID namespace, each went with its command (T2b)
    else:
        pytest.skip("no PID namespace nor cgroup: documented, processes may be left running")


def test_T2b_a_hidden_child_is_gone_as_soon_as_its_command_ends(tmp_path: Path) -> None:
    marker = f"bashgym-attack-{uuid.uuid4().hex[:8]}"
    sleeper = f"{PY} -c 'import time; time.sleep(300)' {marker}"
    seen: list[list[int]] = []

    async def go() -> list[str]:
        async with LocalEnvironment().open(tmp_path, LocalOptions(**TINY)) as s:
            await s.run(f"setsid {sleeper} & ( ( {sleeper} & ) & ); sleep 0.5")
            deadline = time.monotonic() + 5  # the kernel reaps them as the namespace ends
            while survivors(marker) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            seen.append(survivors(marker))
            return s.describe()

    described = asyncio.run(go())
    for pid in survivors(marker):
        os.kill(pid, 9)
    if not pid_namespace(described):
        pytest.skip("needs a PID namespace (without one they live until the session closes)")
    assert seen == [[]]


# -- O: output -----------------------------------------------------------------------------------


def test_O1_a_flood_of_output_is_cut_and_stopped(tmp_path: Path) -> None:
    cut, flood = Session(tmp_path).run("seq 1 20000; echo LAST", "cat /dev/zero", timeout=30)
    assert cut.ok and cut.truncated and len(cut.output) < 2200 and cut.output.endswith("LAST\n")
    assert flood.exit_code is None and flood.reason.startswith("output over")


# -- D: what local does not contain, by design ---------------------------------------------------


def test_D1_the_network_is_on_by_default_as_documented(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port, got = server.getsockname()[1], []

    def accept() -> None:
        conn, _ = server.accept()
        with conn:
            got.append(conn.recv(10))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    code = f"import socket; socket.create_connection(('127.0.0.1', {port})).sendall(b'hi')"
    session = Session(tmp_path)
    try:
        (done,) = session.run(f"{PY} -c {shlex.quote(code)}")
        thread.join(timeout=10)
    finally:
        server.close()
    assert done.ok and got == [b"hi"]
    assert session.holds("network", "ON (the host's")


@needs_root
def test_D2_a_root_command_reads_etc_shadow_as_documented(tmp_path: Path) -> None:
    session = Session(tmp_path)
    (done,) = session.run("head -c 5 /etc/shadow >/dev/null && echo READ")
    assert done.output == "READ\n"  # documented: reads are not limited
    assert session.holds("files", "reads are not limited")
