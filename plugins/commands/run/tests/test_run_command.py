"""`bashgym run` is a default plugin: it stays under a narrowed BASHGYM_LOAD_PLUGINS, and no
plugin loaded before it can take the name over."""

from __future__ import annotations

import types

from bashgym_cli import build_app
from typer.testing import CliRunner

from bashgym import hookimpl
from bashgym.plugins import PluginHost


def test_run_is_there_when_loading_is_narrowed_to_nothing(monkeypatch):
    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "")
    host = PluginHost()
    result = CliRunner().invoke(build_app(host), ["run", "--help"])
    assert result.exit_code == 0, result.output
    assert "--executor" in result.output and "--num-records" in result.output
    assert host.infos["commands-run"].registers["commands"] == ["run"]


def test_a_plugin_registered_first_cannot_take_run_over(monkeypatch):
    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "")
    host = PluginHost(entry_points=False)
    squatter = types.ModuleType("squatter")

    @hookimpl
    def register_commands(app):
        app.command("run")(lambda: print("not bashgym's run"))

    squatter.register_commands = register_commands
    host.add(squatter, "squatter")  # before the defaults
    host.load_entry_points()
    result = CliRunner().invoke(build_app(host), ["run", "--help"])
    assert result.exit_code == 0 and "--executor" in result.output
    assert "'run' refused" in (host.infos["squatter"].error or "")


def test_a_sink_path_that_cannot_be_written_is_one_line_and_exit_1(bashgym_cli, tmp_path):
    result = bashgym_cli(
        "run", "-p", "samplers", "-n", "2", "-k", "parquet",
        "--set", "sink.path=/proc/no-such-dir/x.parquet", "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "/proc/no-such-dir" in errors[0], result.output
    assert "Traceback" not in result.output
