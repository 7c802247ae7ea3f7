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
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bashgym_environments_bubblewrap import BubblewrapEnvironment, why_not
from bashgym_testing import SessionProbe

from bashgym.contracts import Environment, InputError, PathError
from bashgym.plugins import PluginHost


def local_environment() -> Environment:
    """`local` as the kernel's registry gives it: no plugin imports another plugin's code."""
    registry = PluginHost().registry
    if "local" not in registry.items["environments"]:
        pytest.skip("environment local is not installed (bashgym-environments-local)")
    return registry.get("environments", "local").obj


ENVIRONMENTS = {"local": local_environment, "bubblewrap": BubblewrapEnvironment}
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


class Attack(SessionProbe):
    """One open session of the named environment, with its results kept for the assertions."""

    def __init__(self, name: str, workspace: Path, **options: Any) -> None:
        environment = ENVIRONMENTS[name]()
        super().__init__(environment, workspace, environment.Options(**{**TINY, **options}))
        self.name = name


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


# == bubblewrap only: the kernel's interfaces, privileges, secrets, disk, escapes of the timeout ==
#
# Each attack has an id and the claim its test asserts; the closing table of issue 20 lists them.

ATTACKS = {
    "BW-SYSCTL": "/proc/sys is read-only: no global sysctl (core_pattern, randomize_va_space) "
    "takes a write, even as root",
    "BW-KERNEL-FILES": "/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus are read-only; "
    "/proc/kcore, /proc/keys, /proc/timer_list are empty",
    "BW-CAPS": "no capability is held or can come back (effective and bounding sets empty)",
    "BW-UMOUNT": "umount /proc and mount are refused",
    "BW-NAMESPACES": "no new namespace can be made (unshare -U, unshare -m)",
    "BW-MKNOD": "mknod of a device is refused",
    "BW-CHROOT": "chroot (the classic escape) is refused",
    "BW-PTRACE": "ptrace of a process is refused (EPERM)",
    "BW-SECCOMP": "kexec, modules, bpf, perf, keyrings, unshare/setns, TIOCSTI/TIOCLINUX, reboot, "
    "swap, acct, clock, open_by_handle_at, userfaultfd, io_uring, personality: EPERM",
    "BW-TIOCSTI": "TIOCSTI into the terminal a command was given is refused; nothing is injected",
    "BW-SHADOW": "/etc/shadow and /etc/gshadow cannot be read",
    "BW-ENV": "BashGym's ANTHROPIC_API_KEY is nowhere inside: env, /proc/1/environ, "
    "/proc/*/environ, the parent's /proc entry",
    "BW-FDS": "no file descriptor of BashGym's is inherited (only 0, 1, 2)",
    "BW-SIGNAL": "a host process (BashGym's pid) cannot be signalled",
    "BW-WRITE-SYSTEM": "/, /etc, the host's /tmp, the run folder and $HOME take no write",
    "BW-SYMLINK-WRITE": "a workspace symlink to /etc/passwd or the host's /tmp is not writable "
    "through",
    "BW-BACKGROUND": "setsid / nohup / double-forked children die when their command ends",
    "BW-DISK": "a session's files (workspace and /tmp) are held at disk_mb: the writer is stopped",
    "BW-FILE-SIZE": "one file is held at file_size_mb (SIGXFSZ), and the reason says so",
}


def claims(attack_id: str):
    """Mark a test as the check of one attack of ATTACKS."""

    def mark(test):
        assert attack_id in ATTACKS, attack_id
        test.attack_id = attack_id
        return test

    return mark


@pytest.fixture
def bw(tmp_path: Path) -> Attack:
    if (why := why_not()) is not None:
        pytest.skip("needs bwrap (Debian package bubblewrap)" if "installed" in why else why)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Attack("bubblewrap", workspace)


def seccomp_on(attack: Attack) -> bool:
    return attack.holds("system calls", "seccomp")


def test_every_attack_has_its_test() -> None:
    tested = {getattr(f, "attack_id", None) for f in globals().values() if callable(f)}
    assert set(ATTACKS) <= tested


@claims("BW-SYSCTL")
def test_global_sysctls_take_no_write(bw: Attack) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    # each write puts back the value already there: were it to pass, the host is unchanged
    core, aslr, sysctl = bw.run(
        "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern && echo WROTE",
        "cat /proc/sys/kernel/randomize_va_space > /proc/sys/kernel/randomize_va_space"
        " && echo WROTE",
        "sysctl -w kernel.randomize_va_space=$(cat /proc/sys/kernel/randomize_va_space) 2>&1"
        " || echo REFUSED",
    )
    assert "WROTE" not in core.output and "Read-only file system" in core.output
    assert "WROTE" not in aslr.output and "Read-only file system" in aslr.output
    assert "REFUSED" in sysctl.output or "command not found" in sysctl.output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


@claims("BW-KERNEL-FILES")
def test_kernel_interfaces_are_read_only_or_empty(bw: Attack) -> None:
    writes = ["/proc/sysrq-trigger", "/proc/irq/default_smp_affinity", "/sys/kernel/uevent_helper"]
    present = [w for w in writes if os.path.exists(w)]
    script = "; ".join(f"(: > {w}) 2>&1 && echo WROTE {w}" for w in present)
    masked = [m for m in ("/proc/kcore", "/proc/keys", "/proc/timer_list") if os.path.exists(m)]
    writes_done, reads = bw.run(
        script or "true",
        "; ".join(f"echo {m} $(head -c 64 {m} 2>/dev/null | wc -c)" for m in masked) or "true",
    )
    assert "WROTE" not in writes_done.output
    assert all(line.endswith(" 0") for line in reads.output.splitlines()), reads.output


@claims("BW-CAPS")
def test_no_capability_is_held_or_bounded(bw: Attack) -> None:
    (caps,) = bw.run("grep -E 'Cap(Eff|Prm|Bnd|Amb)' /proc/self/status")
    values = dict(line.split() for line in caps.output.splitlines())
    assert values["CapEff:"] == values["CapPrm:"] == values["CapAmb:"] == "0000000000000000"
    if bw.holds("files", "own user namespace"):  # else bwrap cannot empty the bounding set
        assert values["CapBnd:"] == "0000000000000000"  # a setuid program regains nothing


@claims("BW-UMOUNT")
def test_umount_and_mount_are_refused(bw: Attack) -> None:
    umount, mount = bw.run(
        "umount /proc 2>&1 || umount -l /proc 2>&1; test -e /proc/self/status && echo PROC-STAYS",
        "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>&1 || echo REFUSED",
    )
    assert umount.exit_code == 0 and "PROC-STAYS" in umount.output
    assert "REFUSED" in mount.output


@claims("BW-NAMESPACES")
def test_no_new_namespace(bw: Attack) -> None:
    (done,) = bw.run("for ns in -U -m -n -p -i; do unshare $ns true 2>&1; echo rc=$?; done")
    assert done.output.count("rc=") == 5 and "rc=0" not in done.output, done.output


@claims("BW-MKNOD")
def test_mknod_is_refused(bw: Attack) -> None:
    (done,) = bw.run("mknod ./disk b 8 0 2>&1; mknod /tmp/mem c 1 1 2>&1; ls ./disk /tmp/mem 2>&1")
    assert "Operation not permitted" in done.output and "No such file" in done.output
    assert not (bw.workspace / "disk").exists()


@claims("BW-CHROOT")
def test_chroot_escape_is_refused(bw: Attack) -> None:
    code = (
        "import os\n"
        "os.makedirs('jail', exist_ok=True)\n"
        "try:\n"
        "    os.chroot('jail')\n"
        "    for _ in range(64): os.chdir('..')\n"
        "    os.chroot('.'); print('ESCAPED', os.listdir('/'))\n"
        "except OSError as e: print('REFUSED', e.errno)\n"
    )
    (done,) = bw.run(f"{PY} -c {shlex.quote(code)}")
    assert "ESCAPED" not in done.output and "REFUSED 1" in done.output  # EPERM


PTRACE = (
    "import ctypes, errno, subprocess\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "child = subprocess.Popen(['sleep', '5'])\n"
    "r = libc.ptrace(16, child.pid, None, None)\n"  # PTRACE_ATTACH
    "print('PTRACE', 'ok' if r == 0 else errno.errorcode[ctypes.get_errno()])\n"
    "child.kill()\n"
)


@claims("BW-PTRACE")
def test_ptrace_is_refused(bw: Attack) -> None:
    (done,) = bw.run(f"{PY} -c {shlex.quote(PTRACE)}")
    if not seccomp_on(bw):  # without the filter a process may trace its own children
        pytest.skip(f"no seccomp filter here: {bw.notes}")
    assert "PTRACE EPERM" in done.output, done.output


def syscall_probe() -> str:
    """A Python program that makes each blocked system call with harmless arguments and prints
    `name errno-name` (or `name ok`); numbers resolved here, for this machine's architecture."""
    import termios

    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError):  # RuntimeError: the library without libseccomp.so
        pytest.skip("needs libseccomp (Debian libseccomp2) to name the system calls")

    arch = seccomp.system_arch()
    calls = {
        "kexec_load": (0, 0, 0, 0), "init_module": (0, 0, 0), "finit_module": (-1, 0, 0),
        "delete_module": (0, 0), "bpf": (0, 0, 0), "perf_event_open": (0, 0, -1, -1, 0),
        "keyctl": (0, -3, 0), "add_key": (0, 0, 0, 0, 0), "request_key": (0, 0, 0, 0),
        "unshare": (0x10000000,), "setns": (-1, 0), "reboot": (0, 0, 0, 0),
        "swapon": (0, 0), "swapoff": (0,), "acct": (0,), "settimeofday": (0, 0),
        "clock_settime": (0, 0), "open_by_handle_at": (-1, 0, 0), "userfaultfd": (0,),
        "io_uring_setup": (0, 0), "personality": (0x0040000,), "mount": (0, 0, 0, 0, 0),
        "umount2": (0, 0), "pivot_root": (0, 0), "ptrace": (16, 1, 0, 0),
        "ioctl TIOCSTI": (0, termios.TIOCSTI, 0),
        "ioctl TIOCSTI+high": (0, (1 << 32) | termios.TIOCSTI, 0),  # the kernel reads 32 bits
        "ioctl TIOCLINUX": (0, termios.TIOCLINUX, 0),
    }  # fmt: skip
    numbered = {name: (seccomp.resolve_syscall(arch, name.split()[0]), args)
                for name, args in calls.items()}  # fmt: skip
    return (
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        f"for name, (nr, args) in {numbered!r}.items():\n"
        "    ctypes.set_errno(0)\n"
        "    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])\n"
        "    print(name, 'ok' if r >= 0 else errno.errorcode[ctypes.get_errno()])\n"
    )


@claims("BW-SECCOMP")
def test_dangerous_system_calls_get_eperm(bw: Attack) -> None:
    probe = syscall_probe()
    (done,) = bw.run(f"{PY} -c {shlex.quote(probe)}")
    if not seccomp_on(bw):
        pytest.skip(f"no seccomp filter here: {bw.notes}")
    results = dict(line.rsplit(" ", 1) for line in done.output.splitlines())
    assert len(results) == 28, done.output
    assert {name for name, result in results.items() if result != "EPERM"} == set()


@claims("BW-SECCOMP")
def test_ordinary_work_runs_under_the_filter(bw: Attack) -> None:
    threads = (
        "import threading, subprocess, multiprocessing\n"
        "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
        "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())\n"
    )
    done, git = bw.run(
        f"{PY} -c {shlex.quote(threads)}",
        "git init -q r && cd r && echo x > f && git add f && "
        "git -c user.email=a@b -c user.name=a commit -qm m && git log --format=%s",
    )
    assert done.output.split() == ["thread", "child"]
    assert git.ok and git.output.strip() == "m"


def test_without_libseccomp_commands_still_run_and_the_notes_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bashgym_environments_bubblewrap import sandbox, seccomp

    if (why := why_not()) is not None:
        pytest.skip(why)
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # as if it were not installed
    seccomp.compiled.cache_clear()
    sandbox.seccomp_filter.cache_clear()
    try:
        attack = Attack("bubblewrap", tmp_path)
        (done,) = attack.run("echo works")
    finally:
        seccomp.compiled.cache_clear()
        sandbox.seccomp_filter.cache_clear()
    assert done.output == "works\n"
    assert any(n.startswith("NO seccomp filter: libseccomp is missing") for n in attack.notes)
    assert attack.holds("system calls", "NO seccomp filter")


@claims("BW-TIOCSTI")
def test_keystrokes_cannot_be_pushed_into_a_terminal(bw: Attack) -> None:
    """A worker given a real terminal as stdin (as a caller might) tries TIOCSTI on it and on
    /dev/tty: refused, and nothing reaches the terminal's input."""
    from bashgym_procs import spawn

    code = (
        "import fcntl, termios\n"
        "for name, opener in (('stdin', lambda: 0), ('tty', lambda: open('/dev/tty').fileno())):\n"
        "    try:\n"
        "        fcntl.ioctl(opener(), termios.TIOCSTI, b'X'); print(name, 'INJECTED')\n"
        "    except OSError as e: print(name, 'refused', e.errno)\n"
    )
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)  # an injected byte is readable at once, without a newline
    try:

        def start(session) -> None:
            argv, env = session.argv([sys.executable, "-c", code])
            proc = spawn(argv, env=env, stdin=slave, stdout=subprocess.PIPE)
            bw.got = proc.communicate(timeout=20)[0].decode()

        bw.run(inspect=start)
        os.set_blocking(slave, False)
        try:
            pending = os.read(slave, 100)
        except BlockingIOError:
            pending = b""
    finally:
        os.close(master)
        os.close(slave)
    assert "INJECTED" not in bw.got and bw.got.count("refused") == 2, bw.got
    assert pending == b""


@claims("BW-SHADOW")
def test_shadow_files_cannot_be_read(bw: Attack) -> None:
    present = [p for p in ("/etc/shadow", "/etc/gshadow") if os.path.exists(p)]
    if not present:
        pytest.skip("no /etc/shadow here")
    (done,) = bw.run("; ".join(f"cat {p} 2>&1 | head -c 200; echo" for p in present))
    assert "root:" not in done.output, done.output


@claims("BW-ENV")
def test_bashgyms_api_key_is_nowhere_inside(bw: Attack, monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    env, procs, parent = bw.run(
        "env; cat /proc/self/environ",
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
        f"cat /proc/{os.getpid()}/environ /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'",
    )
    for done in (env, procs, parent):
        assert key not in done.output and "ANTHROPIC_API_KEY" not in done.output


@claims("BW-FDS")
def test_no_descriptor_of_bashgym_is_inherited(bw: Attack, tmp_path: Path) -> None:
    with open(tmp_path / "held-by-bashgym", "w"):  # an open file in BashGym, not inheritable
        (done,) = bw.run(f"{PY} -c 'import os; print(sorted(os.listdir(\"/proc/self/fd\")))'")
    assert done.output.strip() == "['0', '1', '2', '3']"  # 3: the listing itself


@claims("BW-SIGNAL")
def test_a_host_process_cannot_be_signalled(bw: Attack) -> None:
    target = subprocess.Popen(["sleep", "30"])
    try:
        (done,) = bw.run(
            f"kill -9 {target.pid} {os.getpid()} 2>&1; kill -9 -1 2>&1; echo after-kill"
        )
        assert target.poll() is None  # alive: not even visible inside
    finally:
        target.kill()
        target.wait()
    assert "No such process" in done.output


@claims("BW-WRITE-SYSTEM")
def test_the_system_takes_no_write(bw: Attack) -> None:
    name = f"bashgym-attack-{uuid.uuid4().hex[:8]}"
    run_dir = Path(tempfile.mkdtemp(prefix="bashgym-attack-run-", dir="/var/tmp"))
    try:  # a run folder as BashGym makes it: run.json beside the tasks' workspaces
        (run_dir / "run.json").write_text("{}")
        (run_dir / "workspaces" / "other").mkdir(parents=True)
        workspace = run_dir / "workspaces" / "mine"
        workspace.mkdir()
        home = os.path.expanduser("~")
        targets = [f"/{name}", f"/etc/{name}", f"/tmp/{name}", f"{home}/{name}"]
        targets += [f"{run_dir}/{name}", f"{run_dir}/workspaces/other/{name}"]
        script = "; ".join(f"echo pwned > {t} 2>&1" for t in targets)
        script += f"; echo pwned > {run_dir}/run.json 2>&1; rm -f {run_dir}/run.json 2>&1; true"
        (done,) = Attack("bubblewrap", workspace).run(script)
        written = [t for t in targets if os.path.exists(t)]
        run_json = (run_dir / "run.json").read_text()
    finally:
        shutil.rmtree(run_dir)
    assert written == [] and run_json == "{}"
    assert done.output.count("Read-only file system") >= 6, done.output  # /tmp: the session's


@claims("BW-SYMLINK-WRITE")
def test_symlinks_to_the_system_are_not_written_through(bw: Attack) -> None:
    host_tmp = Path(tempfile.mkdtemp(prefix="bashgym-attack-hosttmp-"))
    try:
        (bw.workspace / "passwd").symlink_to("/etc/passwd")
        (bw.workspace / "hosttmp").symlink_to(host_tmp)
        before = Path("/etc/passwd").read_bytes()
        (done,) = bw.run(
            "echo 'evil:x:0:0::/:/bin/sh' >> passwd 2>&1; echo x > hosttmp/f 2>&1; ls hosttmp/ 2>&1"
        )
        assert Path("/etc/passwd").read_bytes() == before
        assert list(host_tmp.iterdir()) == []
    finally:
        shutil.rmtree(host_tmp)
    # root: the system is read-only; another user: not even its own to write
    assert "Read-only file system" in done.output or "Permission denied" in done.output


@claims("BW-BACKGROUND")
def test_background_children_die_with_their_command(bw: Attack) -> None:
    beat = bw.workspace / "beat"
    forms = [
        "setsid sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' >/dev/null 2>&1 &",
        "nohup sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' >/dev/null 2>&1 &",
        "(sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' &) >/dev/null 2>&1",
    ]
    for form in forms:
        (done,) = bw.run(f"{form}\nsleep 0.2; echo started")
        assert done.ok and beat.exists(), form
        last = beat.read_text()
        time.sleep(0.3)  # a live writer would have written 6 times by now
        assert beat.read_text() == last, form
        beat.unlink()


@claims("BW-DISK")
def test_the_sessions_files_are_held_at_disk_mb(tmp_path: Path) -> None:
    """Writing past disk_mb in the workspace or in /tmp stops the writer; then no file can grow
    (reading and removing still work) until the session is back under its limit."""
    if (why := why_not()) is not None:
        pytest.skip(why)
    attack = Attack("bubblewrap", tmp_path, disk_mb=40, file_size_mb=30, timeout_s=20)
    write = "for i in $(seq 1 20); do head -c 20000000 /dev/zero > {where}/f$i; sleep 0.1; done"
    ws, full, _, freed, tmp, _, again = attack.run(
        write.format(where="."),
        "sh -c 'echo more > more.txt'; cat f1 | wc -c",
        "rm -f f*",
        "echo more > more.txt; cat more.txt",
        write.format(where="/tmp"),
        "rm /tmp/f*",
        "echo back > back.txt; cat back.txt",
    )
    assert attack.holds("disk", "40 MB")
    stopped = "disk limit (40 MB) reached"
    assert ws.exit_code is None and stopped in ws.reason, ws  # stopped before its 20 files
    assert "File size limit exceeded" in full.output and "20000000" in full.output
    assert stopped in full.reason
    assert freed.output == "more\n" and stopped not in freed.reason
    assert tmp.exit_code is None and stopped in tmp.reason, tmp
    assert again.output == "back\n"


@claims("BW-DISK")
def test_a_burst_shorter_than_the_watchers_interval_is_seen_at_its_end(tmp_path: Path) -> None:
    if (why := why_not()) is not None:
        pytest.skip(why)
    attack = Attack("bubblewrap", tmp_path, disk_mb=10, file_size_mb=30)
    burst, after = attack.run(
        "head -c 15000000 /dev/zero > f; echo done", "sh -c 'echo x > g'; wc -c < g"
    )
    assert burst.output == "done\n" and "disk limit (10 MB) reached" in burst.reason
    assert "File size limit exceeded" in after.output and after.output.endswith("0\n")


@claims("BW-DISK")
def test_without_a_cgroup_the_writing_command_is_stopped(tmp_path: Path) -> None:
    """Where no cgroup can be made (not root, no delegation) the command in flight is stopped
    through its process group; its output is lost, the reason says why."""
    if (why := why_not()) is not None:
        pytest.skip(why)
    environment = BubblewrapEnvironment()
    options = environment.Options(**{**TINY, "disk_mb": 20, "file_size_mb": 30})

    async def go():
        async with environment.open(tmp_path, options) as session:
            cage, session.cage = session.cage, None  # as on a machine without one
            try:
                return await session.run(
                    "for i in $(seq 1 20); do head -c 10000000 /dev/zero > f$i; sleep 0.1; done"
                )
            finally:
                session.cage = cage  # removed at close

    done = asyncio.run(go())
    assert done.exit_code is None and done.reason.startswith("stopped; disk limit (20 MB)")
    assert len(list(tmp_path.glob("f*"))) < 20


def test_the_disk_limit_can_be_lifted(tmp_path: Path) -> None:
    if (why := why_not()) is not None:
        pytest.skip(why)
    attack = Attack("bubblewrap", tmp_path, disk_mb=None)
    (done,) = attack.run("head -c 3000000 /dev/zero > f; wc -c < f")
    assert done.ok and done.output.strip() == "3000000" and attack.holds("disk", "NOT limited")


@claims("BW-FILE-SIZE")
def test_one_file_is_held_at_file_size_mb(bw: Attack) -> None:
    attack = Attack("bubblewrap", bw.workspace, file_size_mb=2)
    (done,) = attack.run("head -c 5000000 /dev/zero > big; echo wrote")
    assert (bw.workspace / "big").stat().st_size == 2 * 1024 * 1024
    assert "file size limit" in done.reason or "File size limit exceeded" in done.output
