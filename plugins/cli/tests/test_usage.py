"""Every command's usage line names its arguments one way: upper case (RUN_FILE, ROLE, JOB), as
the help's prose names them, never the Python parameter's name (`{job_dir}`, `[run_dir]`)."""

from __future__ import annotations

import re

import typer
from bashgym_cli.app import build_app
from typer.testing import CliRunner

from bashgym.plugins import PluginHost

USAGE = re.compile(r"Usage: (\S+(?: \S+)*)")


def command_paths(host: PluginHost) -> list[list[str]]:
    """The argv of every command and group of the real CLI, walked from its click tree."""
    root = typer.main.get_command(build_app(host))
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        paths.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(root, [])
    return paths


def argument_names(usage: str) -> list[str]:
    """`bashgym orchestrate retry [OPTIONS] {JOB} {TASK}` -> ["JOB", "TASK"]: each word after
    `[OPTIONS]`, without the braces, brackets, `--` and `...` that mark its kind."""
    after = usage.split("[OPTIONS]", 1)[1].split()
    return [name for word in after if (name := word.strip("{}[].-"))]


def test_every_usage_line_names_its_arguments_in_upper_case(bashgym_env, bashgym_host):
    runner = CliRunner()
    seen: dict[str, list[str]] = {}
    for path in command_paths(bashgym_host):
        result = runner.invoke(build_app(bashgym_host), [*path, "--help"], env={"COLUMNS": "250"})
        assert result.exit_code == 0, (path, result.output)
        found = USAGE.search(result.output)
        assert found, (path, result.output)
        seen[" ".join(path)] = argument_names(found.group(1))
    # the walk reached the plugins' commands, groups and sub-commands alike
    assert seen["orchestrate retry"] == ["JOB", "TASK"]
    assert seen["options"] == ["ROLE", "NAME"]
    assert seen["pipeline export"] == ["PIPELINE", "OUT_FILE"]
    lower = {cmd: names for cmd, names in seen.items() if any(n != n.upper() for n in names)}
    assert lower == {}
