"""What only bubblewrap does, with real bwrap processes: one path for host and sandbox, a private
/tmp, the `hide` list, long-lived workers through `argv`, and saying why when bwrap cannot run."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from bashgym_environments_bubblewrap import BubblewrapEnvironment, BubblewrapOptions, why_not
from bashgym_environments_bubblewrap.sandbox import bwrap_argv, hidden_paths
from bashgym_procs import spawn, stop

from bashgym.contracts import InputError

SMALL = {"timeout_s": 10, "processes": 64, "memory_mb": 256}


@pytest.fixture
def needs_bwrap() -> None:
    why = why_not()
    if why is not None:
        pytest.skip("needs bwrap (Debian package bubblewrap)" if "installed" in why else why)


def run_in(workspace: Path, *commands: str, **options) -> list:
    async def go():
        opts = BubblewrapOptions(**{**SMALL, **options})
        async with BubblewrapEnvironment().open(workspace, opts) as session:
            return [await session.run(c) for c in commands]

    return asyncio.run(go())


@pytest.mark.usefixtures("needs_bwrap")
def test_the_workspace_has_the_same_path_inside_and_tmp_is_the_sessions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"  # under /tmp, which the sandbox replaces by its own
    workspace.mkdir()
    (workspace / "in.txt").write_text("given\n")
    (tmp_path / "beside.txt").write_text("BESIDE-CONTENT\n")
    where, tmp, again = run_in(
        workspace,
        "pwd; cat in.txt; echo made > out.txt; echo $TMPDIR",
        f"echo scratch > /tmp/scratch.txt; ls /tmp; cat {tmp_path}/beside.txt",
        "ls /tmp",
    )
    assert where.output.splitlines() == [str(workspace.resolve()), "given", "/tmp"]
    assert (workspace / "out.txt").read_text() == "made\n"
    assert "BESIDE-CONTENT" not in tmp.output and "No such file" in tmp.output
    assert not (Path("/tmp") / "scratch.txt").exists()
    assert "scratch.txt" in again.output  # the session's /tmp is kept across its commands
    (fresh,) = run_in(workspace, "ls /tmp")
    assert "scratch.txt" not in fresh.output  # and not seen by the next session

    async def session_tmp() -> tuple[Path, bool]:
        async with BubblewrapEnvironment().open(workspace, BubblewrapOptions(**SMALL)) as s:
            return s.tmp, s.tmp.is_dir()

    folder, existed = asyncio.run(session_tmp())
    assert existed and not folder.exists()  # removed at close


@pytest.mark.usefixtures("needs_bwrap")
def test_hidden_paths_are_empty_inside(tmp_path: Path) -> None:
    secret_home = Path(tempfile.mkdtemp(prefix="bashgym-hide-", dir="/var/tmp"))
    try:
        (secret_home / "tokens").mkdir()
        (secret_home / "tokens" / "t").write_text("token\n")
        (secret_home / "netrc").write_text("password\n")
        (secret_home / "plain").write_text("plain\n")
        hide = [str(secret_home / "tokens"), str(secret_home / "netrc"), "/no/such/path"]
        listing, netrc, plain = run_in(
            tmp_path,
            f"ls -A {secret_home}/tokens | wc -l",
            f"cat {secret_home}/netrc",
            f"cat {secret_home}/plain",
            hide=hide,
        )
    finally:
        shutil.rmtree(secret_home)
    assert listing.output.strip() == "0"
    assert netrc.exit_code != 0 and "password" not in netrc.output  # /dev/null, unopenable
    assert plain.output == "plain\n"  # reads elsewhere are not limited (documented)


def test_tilde_in_hide_means_each_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".netrc").write_text("x")
    monkeypatch.setenv("HOME", str(home))
    found = hidden_paths(["~/.aws", "~/.netrc", "~/.not-there"])
    assert found[:2] == [(home / ".aws").resolve(), (home / ".netrc").resolve()]
    argv = bwrap_argv("bwrap", tmp_path / "ws", network=False, hide=found[:2])
    assert argv[argv.index(str((home / ".aws").resolve())) - 1] == "--tmpfs"
    assert argv[argv.index(str((home / ".netrc").resolve())) - 2 :][:2] == [
        "--ro-bind",
        "/dev/null",
    ]
    assert argv.index("--tmpfs") < argv.index("--bind")  # the workspace is bound last
    assert argv[-1] == "--" and "--unshare-net" in argv and "--cap-drop" in argv
    assert "--unshare-net" not in bwrap_argv("bwrap", tmp_path, network=True, hide=[])


@pytest.mark.usefixtures("needs_bwrap")
def test_more_folders_can_be_made_writable(tmp_path: Path) -> None:
    extra = Path(tempfile.mkdtemp(prefix="bashgym-writable-", dir="/var/tmp"))
    try:
        (refused,) = run_in(tmp_path, f"echo x > {extra}/f")
        assert refused.exit_code != 0 and not (extra / "f").exists()
        (allowed,) = run_in(tmp_path, f"echo x > {extra}/f", writable=[str(extra)])
        assert allowed.ok and (extra / "f").read_text() == "x\n"
        with pytest.raises(InputError, match="not a folder"):
            run_in(tmp_path, "true", writable=[str(extra / "f")])
    finally:
        shutil.rmtree(extra)


@pytest.mark.usefixtures("needs_bwrap")
def test_with_network_allowed_the_hosts_run_is_kept(tmp_path: Path) -> None:
    cut, shared = (
        run_in(tmp_path, "ls -A /run | wc -l")[0],
        run_in(tmp_path, "ls -A /run | wc -l", network=True)[0],
    )
    host = len(list(Path("/run").iterdir()))
    assert cut.output.strip() == "0"
    assert int(shared.output.strip()) == host


@pytest.mark.usefixtures("needs_bwrap")
def test_a_worker_started_through_argv_is_sandboxed_and_stopped_at_close(tmp_path: Path) -> None:
    worker = (
        "import os, sys\n"
        "for line in sys.stdin:\n"
        "    print(os.getcwd(), os.path.exists('/run/docker.sock'), os.getpid(), line.strip(),"
        " flush=True)\n"
    )

    async def go():
        async with BubblewrapEnvironment().open(tmp_path, BubblewrapOptions(**SMALL)) as session:
            argv, env = session.argv(["python3", "-c", worker])
            proc = spawn(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(b"ping\n")
                proc.stdin.flush()
                reply = proc.stdout.readline().decode()
                held = session.cage is not None and "pids" in session.cage.dirs
            except BaseException:
                stop(proc)
                raise
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stop(proc)
            code = None
        return reply, code, held

    reply, code, held = asyncio.run(go())
    cwd, docker, pid, word = reply.split()
    assert (cwd, docker, word) == (str(tmp_path.resolve()), "False", "ping")
    assert int(pid) <= 3  # its own PID namespace: bwrap's init is 1
    if not held:
        pytest.skip("needs a pids cgroup (root with a writable cgroup hierarchy) for the close")
    assert code == -9


def test_why_bwrap_cannot_run_is_said(tmp_path: Path) -> None:
    assert why_not("bashgym-no-such-bwrap") == (
        "bashgym-no-such-bwrap is not installed (Debian package bubblewrap)"
    )
    failing = tmp_path / "fake-bwrap"
    failing.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    failing.chmod(0o755)
    assert why_not(str(failing)) == (
        f"{failing} cannot create namespaces here: bwrap: No permissions to create new namespace"
    )
    with pytest.raises(InputError, match=r"cannot run here: .*not installed"):
        run_in(tmp_path, "true", bwrap="bashgym-no-such-bwrap")


@pytest.mark.usefixtures("needs_bwrap")
def test_a_python_living_under_tmp_stays_visible_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout and its venv under /tmp (as CI clones often are): the sandbox replaces /tmp,
    yet the interpreter and its sys.path folders must still be there, read-only."""
    import sys

    site = tmp_path / "clone" / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "plugin.py").write_text("print('imported from /tmp')\n")
    (tmp_path / "clone" / "secret-beside.txt").write_text("not on sys.path\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    seen, write, beside = run_in(
        workspace,
        f"cat {site}/plugin.py",
        f"echo x > {site}/new.py",
        f"cat {tmp_path}/clone/secret-beside.txt",
    )
    assert seen.exit_code == 0 and "imported from /tmp" in seen.output
    assert write.exit_code != 0 and "Read-only file system" in write.output
    assert beside.exit_code != 0  # only the runtime's own folders come back, not their parents
    assert not (site / "new.py").exists()
