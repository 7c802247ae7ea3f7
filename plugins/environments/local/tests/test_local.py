"""Environment `local` with real processes: commands, limits, the environment allow-list, long-lived
workers through `argv`, and cleanup. The attack list (network, writes, secrets, bombs, ...) runs
over every environment in plugins/environments/bubblewrap/tests/test_attacks.py, and local's own
(privileges, BashGym's environment, the terminal) in test_attacks.py here."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from bashgym_environments_local import LocalEnvironment, LocalOptions, lockdown
from bashgym_environments_local import environment as local_environment
from bashgym_procs import spawn, stop

from bashgym.contracts import InputError

SMALL = {"timeout_s": 10, "processes": 64, "memory_mb": 256}


def run_in(workspace: Path, *commands: str, **options) -> list:
    """Open a local session on `workspace`, run `commands` in order, return their Completed."""

    async def go():
        async with LocalEnvironment().open(workspace, LocalOptions(**{**SMALL, **options})) as s:
            return [await s.run(c) for c in commands]

    return asyncio.run(go())


def test_a_command_runs_in_the_workspace_and_reports_how_it_ended(tmp_path: Path) -> None:
    (tmp_path / "given.txt").write_text("from the host\n")
    ok, failed = run_in(tmp_path, "pwd; cat given.txt; echo made >made.txt", "echo oops>&2; exit 3")
    assert ok.exit_code == 0 and ok.ok and ok.reason == "exited 0"
    assert ok.output.splitlines() == [str(tmp_path.resolve()), "from the host"]
    assert (tmp_path / "made.txt").read_text() == "made\n"
    assert (failed.exit_code, failed.reason, failed.output) == (3, "exited 3", "oops\n")
    assert not failed.timed_out and not failed.truncated


def test_only_allowed_variables_reach_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "OPENAI_API_KEY": "sk-test-abc123",
        "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
        "GH_TOKEN": "ghp_test",
        "MY_SETTING": "visible",
        "MY_SERVICE_PASSWORD": "hunter2",
        "LC_ALL": "C.UTF-8",
    }.items():
        monkeypatch.setenv(name, value)
    (done,) = run_in(tmp_path, "env", pass_env=["MY_*"], env={"EXTRA": "set"})
    seen = dict(line.split("=", 1) for line in done.output.splitlines() if "=" in line)
    assert seen["MY_SETTING"] == "visible" and seen["EXTRA"] == "set"
    assert seen["LC_ALL"] == "C.UTF-8"
    assert seen["HOME"] == str(tmp_path.resolve())
    assert Path(seen["TMPDIR"]).name.startswith("bashgym-tmp-")
    for secret in ("sk-test-abc123", "aws-test-secret", "ghp_test", "hunter2"):
        assert secret not in done.output
    (named,) = run_in(tmp_path, "echo $MY_SERVICE_PASSWORD", pass_env=["MY_SERVICE_PASSWORD"])
    assert named.output == "hunter2\n"  # a secret-looking name passes when named exactly


def test_a_command_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    (done,) = run_in(tmp_path, "echo started; sleep 60; echo never", timeout_s=1)
    assert done.timed_out and done.exit_code is None
    assert done.reason == "timed out after 1s"
    assert done.output == "started\n"


def test_output_is_cut_and_a_flood_is_stopped(tmp_path: Path) -> None:
    cut, flood = run_in(
        tmp_path, "head -c 50000 /dev/zero | tr '\\0' x; echo; echo END", "yes", output_limit=1000
    )
    assert cut.exit_code == 0 and cut.truncated
    assert len(cut.output) < 1200 and cut.output.rstrip().endswith("END")
    assert "bytes of output left out" in cut.output
    assert flood.exit_code is None and flood.truncated
    assert flood.reason.startswith("output over") and flood.reason.endswith("stopped")


def test_cpu_and_file_size_limits_hold_per_process(tmp_path: Path) -> None:
    cpu, big = run_in(
        tmp_path,
        "python3 -c 'while True: pass'",
        "head -c 3000000 /dev/zero > big.bin",
        cpu_s=1,
        file_size_mb=1,
    )
    assert cpu.exit_code == 128 + 24 and "CPU time limit" in cpu.reason  # SIGXCPU
    assert big.exit_code != 0 and "file size limit" in big.reason  # SIGXFSZ
    assert (tmp_path / "big.bin").stat().st_size == 1024 * 1024


def test_a_worker_started_through_argv_lives_in_the_session(tmp_path: Path) -> None:
    """What a warm pool does: start a Python worker with `argv`, talk over stdin/stdout; the
    worker has the session's workspace, environment and cgroup, and dies at close."""
    worker = "import os, sys\nfor line in sys.stdin:\n    print(os.getcwd(), os.environ['HOME'], line.strip(), flush=True)\n"  # noqa: E501

    async def go() -> tuple[str, int, Path | None]:
        async with LocalEnvironment().open(tmp_path, LocalOptions(**SMALL)) as session:
            argv, env = session.argv(["python3", "-c", worker])
            proc = spawn(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(b"ping\n")
                proc.stdin.flush()
                reply = proc.stdout.readline().decode()
                cage = session.cage.dirs.get("pids") if session.cage else None
            except BaseException:
                stop(proc)
                raise
        try:
            code = proc.wait(timeout=10)  # the close stopped it, if a cgroup held it
        except subprocess.TimeoutExpired:
            stop(proc)
            code = None
        return reply, code, cage

    reply, code, cage = asyncio.run(go())
    root = str(tmp_path.resolve())
    assert reply.split() == [root, root, "ping"]
    if cage is None:
        pytest.skip("needs a pids cgroup (root with a writable cgroup hierarchy) for the close")
    assert code == -9 and not cage.exists()


def test_the_session_cgroup_holds_the_limits_and_goes_at_close(tmp_path: Path) -> None:
    async def go():
        async with LocalEnvironment().open(tmp_path, LocalOptions(**SMALL)) as session:
            if session.cage is None:
                return None, None, session.notes
            done = await session.run("cat /proc/self/cgroup")
            return session.cage, done, session.notes

    cage, done, notes = asyncio.run(go())
    if cage is None:
        assert any("processes" in n for n in notes)  # the degraded session says so
        pytest.skip(f"needs a writable pids or memory cgroup here: {notes}")
    for controller, folder in cage.dirs.items():
        assert not folder.exists(), controller
        assert f":{controller}:" in done.output or "0::" in done.output
    assert notes == []


def test_network_false_is_refused_where_it_cannot_be_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_environment, "try_unshare", lambda flags, *argv: "no namespaces here")
    with pytest.raises(InputError, match="cannot cut the network here"):
        run_in(tmp_path, "true", network=False)
    (done,) = run_in(tmp_path, "echo still runs")  # without namespaces: degraded, and said

    async def notes():
        async with LocalEnvironment().open(tmp_path, LocalOptions(**SMALL)) as session:
            return session.notes, session.describe()

    said, described = asyncio.run(notes())
    assert done.output == "still runs\n"
    assert "processes: no PID namespace (no namespaces here)" in said
    assert "network: ON (the host's; network=false cuts it)" in described
    assert any(line.startswith("processes: shared with the host") for line in described)


@pytest.mark.parametrize("bad", ["missing", "a-file", "/"])
def test_a_workspace_must_be_a_real_folder(tmp_path: Path, bad: str) -> None:
    (tmp_path / "a-file").write_text("x")
    target = Path(bad) if bad == "/" else tmp_path / bad
    with pytest.raises(InputError, match=r"workspace|cannot be /"):
        run_in(target, "true")


def test_local_is_registered_with_its_options(bashgym_cli) -> None:
    shown = bashgym_cli("options", "environment", "local")
    assert shown.exit_code == 0, shown.output
    for option in ("timeout_s", "memory_mb", "processes", "network", "pass_env"):
        assert option in shown.stdout
    listed = json.loads(bashgym_cli("plugins", "--json").stdout)
    assert any(p["registers"].get("environments") == ["local"] for p in listed)


def test_what_local_holds_is_written_down(tmp_path: Path) -> None:
    async def go():
        async with LocalEnvironment().open(tmp_path, LocalOptions(**SMALL)) as session:
            return session.describe()

    lines = asyncio.run(go())
    heads = [line.split(":", 1)[0] for line in lines]
    for head in ("network", "processes", "files", "time", "memory", "output", "environment"):
        assert head in heads
    assert any("NOT contained" in line for line in lines if line.startswith("files"))


def test_without_setpriv_the_session_says_privileges_are_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lockdown, "setpriv_path", lambda: None)

    async def go():
        async with LocalEnvironment().open(tmp_path, LocalOptions(**SMALL)) as session:
            done = await session.run("grep NoNewPrivs /proc/self/status")
            return session.notes, session.describe(), done

    notes, described, done = asyncio.run(go())
    assert "privileges: NOT dropped (setpriv, util-linux, is not installed)" in notes
    assert any(line.startswith("privileges: NOT dropped") for line in described)
    assert done.ok and done.output.split() == ["NoNewPrivs:", "0"]  # degraded, and said
