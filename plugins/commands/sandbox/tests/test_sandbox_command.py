"""`bashgym sandbox run` in-process (bashgym_cli) and once as the real console script, in each
environment: exit codes, output, the stop reason, workspaces, options and bad input."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from bashgym_commands_sandbox import EXIT_STOPPED
from bashgym_environments_bubblewrap import BubblewrapEnvironment, why_not


@pytest.fixture(params=["local", "bubblewrap"])
def env_name(request: pytest.FixtureRequest) -> str:
    if request.param == "bubblewrap" and (why := why_not()) is not None:
        pytest.skip("needs bwrap (Debian package bubblewrap)" if "installed" in why else why)
    return request.param


def test_the_command_exit_code_output_and_reason(bashgym_cli, env_name) -> None:
    done = bashgym_cli("sandbox", "run", "-e", env_name, "--", "echo out; echo err >&2; exit 7")
    assert done.exit_code == 7
    assert done.stdout == "out\nerr\n"
    assert f"{env_name}: exited 7 (" in done.stderr


def test_a_command_the_sandbox_stopped_exits_124(bashgym_cli, env_name) -> None:
    done = bashgym_cli("sandbox", "run", "-e", env_name, "--timeout", "1", "--", "sleep 20")
    assert done.exit_code == EXIT_STOPPED == 124
    assert f"{env_name}: timed out after 1s" in done.stderr
    flood = bashgym_cli("sandbox", "run", "-e", env_name, "--set", "output_limit=1000", "yes")
    assert flood.exit_code == 124 and "output over" in flood.stderr
    assert "output cut" in flood.stderr and len(flood.stdout) < 1200


def test_one_word_is_shell_and_several_are_an_argv(bashgym_cli) -> None:
    shell = bashgym_cli("sandbox", "run", "-e", "local", "--", "echo $((6 * 7)) | tr 4 X")
    argv = bashgym_cli("sandbox", "run", "-e", "local", "--", "printf", "%s|", "a b", "$HOME")
    assert (shell.exit_code, shell.stdout) == (0, "X2\n")
    assert (argv.exit_code, argv.stdout) == (0, "a b|$HOME|")


def test_a_workdir_is_kept_and_a_temporary_one_removed(bashgym_cli, tmp_path: Path) -> None:
    kept = bashgym_cli("sandbox", "run", "-e", "local", "-w", tmp_path, "--", "echo x > made")
    assert kept.exit_code == 0 and (tmp_path / "made").read_text() == "x\n"
    scratch = bashgym_cli("sandbox", "run", "-e", "local", "--json", "--", "pwd; echo x > made")
    report = json.loads(scratch.stdout)
    assert report["output"] == report["workspace"] + "\n"
    assert not Path(report["workspace"]).exists()


def test_the_default_is_bubblewrap_else_local_with_a_note(bashgym_cli, monkeypatch) -> None:
    if why_not() is None:
        done = bashgym_cli("sandbox", "run", "--", "true")
        assert done.exit_code == 0 and "bubblewrap: exited 0" in done.stderr
        assert "note:" not in done.stderr
    missing = "bwrap is not installed (Debian package bubblewrap)"
    monkeypatch.setattr(BubblewrapEnvironment, "available", lambda self: missing)
    done = bashgym_cli("sandbox", "run", "--", "true")
    assert done.exit_code == 0 and "local: exited 0" in done.stderr
    assert f"bubblewrap is not available here ({missing}); running in local" in " ".join(
        done.stderr.split()
    )
    refused = bashgym_cli("sandbox", "run", "-e", "bubblewrap", "--", "true")
    assert refused.exit_code == 2 and "cannot run here" in refused.stderr


def test_options_are_set_by_name(bashgym_cli) -> None:
    done = bashgym_cli(
        "sandbox", "run", "-e", "local", "--set", 'env={"GREETING": "hello"}',
        "--set", "pass_env=[]", "--json", "--explain", "--", "echo $GREETING",
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert done.exit_code == 0 and report["output"] == "hello\n"
    assert any(line.startswith("environment: only PATH") for line in report["holds"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "nope", "--", "true"], "unknown environment 'nope'"),
        (["-e", "local", "--set", "memory_mb=lots", "--", "true"], "memory_mb"),
        (["-e", "local", "--set", "no_such=1", "--", "true"], "no_such"),
        (["-e", "local", "--set", "novalue", "--", "true"], "KEY=VALUE"),
        (["-e", "local", "-w", "/no/such/folder", "--", "true"], "no such folder"),
        (["-e", "local", "--"], "give the command to run"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(bashgym_cli, args, message) -> None:
    done = bashgym_cli("sandbox", "run", *args)
    assert done.exit_code == 2
    assert message in " ".join(done.stderr.split()) and "Traceback" not in done.output


def test_the_help_teaches(bashgym_cli) -> None:
    done = bashgym_cli("sandbox", "run", "--help")
    assert done.exit_code == 0
    for words in ("Examples", "124", "--workdir", "--set", "bubblewrap", "local"):
        assert words in done.stdout


def test_the_real_command_keeps_the_parents_secrets_out(bashgym_cli, env_name) -> None:
    """Through the console script, with an API key in its environment from exec on (so
    /proc/PID/environ of BashGym holds it, unlike a key set in this test process)."""
    key = f"sk-test-{uuid.uuid4().hex}"
    attack = "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep sk-test-; exit 5"
    done = bashgym_cli.subprocess(
        "sandbox", "run", "-e", env_name, "--json", "--explain", "--", attack,
        env={"OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key},
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert done.exit_code == 5 and report["exit_code"] == 5 and report["environment"] == env_name
    assert "HOME=" + report["workspace"] in report["output"]
    shared = not any("own PID namespace" in line for line in report["holds"])
    if env_name == "local" and shared:  # documented: without a PID namespace /proc shows it
        assert key in report["output"]
    else:
        assert key not in report["output"] and "API_KEY" not in report["output"]


def test_an_environment_without_describe_or_notes_runs_too(bashgym_cli, register_plugin) -> None:
    """A third-party environment needs only the kernel's contract."""
    from contextlib import asynccontextmanager

    from bashgym_procs import run

    from bashgym import hookimpl
    from bashgym.contracts import Environment, EnvironmentSession

    class Bare(EnvironmentSession):
        async def run(self, command, *, timeout=None):
            return await run(["bash", "-c", command], cwd=self.workspace.root, timeout=timeout)

        def argv(self, argv):
            return list(argv), {}

    class BareEnvironment(Environment):
        @asynccontextmanager
        async def open(self, workspace, options):
            from bashgym_sandbox import Workspace

            yield Bare(Workspace(workspace))

    class Plugin:
        @hookimpl
        def register_environments(self, register):
            register("bare", BareEnvironment())

    register_plugin(Plugin(), "bare-environment")
    done = bashgym_cli("sandbox", "run", "-e", "bare", "--explain", "--", "echo plain; exit 4")
    assert done.exit_code == 4 and done.stdout == "plain\n" and "bare: exited 4" in done.stderr


def test_an_unknown_option_names_the_valid_ones_and_the_one_meant(bashgym_cli) -> None:
    """Before: `environment local: invalid LocalOptions: memry_mb: unknown option`: a class
    name the user never typed, and no hint of what the option is called."""
    done = bashgym_cli("sandbox", "run", "-e", "local", "--set", "memry_mb=5", "--", "true")

    assert done.exit_code == 2
    line = " ".join(done.stderr.split())
    assert line.startswith(
        "error: environment local: memry_mb: unknown option (did you mean 'memory_mb'?). "
        "Valid options: timeout_s, cpu_s, memory_mb,"
    ), line
    assert "network" in line
    assert "Options" not in line  # LocalOptions, the model's class


def test_a_far_off_name_gets_the_valid_ones_without_a_guess(bashgym_cli) -> None:
    done = bashgym_cli("sandbox", "run", "-e", "local", "--set", "zzz=1", "--", "true")

    line = " ".join(done.stderr.split())
    assert done.exit_code == 2 and "zzz: unknown option. Valid options: timeout_s" in line, line
    assert "did you mean" not in line


def test_a_mistake_with_json_is_json(bashgym_cli) -> None:
    """Before: the plain `error:` line on stderr, nothing on stdout for a script to read."""
    done = bashgym_cli("sandbox", "run", "-e", "local", "--json", "--set", "zzz=1", "--", "true")

    assert done.exit_code == 2
    doc = json.loads(done.stdout)
    assert doc["ok"] is False and doc["error"].startswith("environment local: zzz: unknown")
