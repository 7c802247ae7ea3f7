"""`bashgym run` is a default plugin: it stays under a narrowed BASHGYM_LOAD_PLUGINS, and no
plugin loaded before it can take the name over."""

from __future__ import annotations

import types
from pathlib import Path

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


def test_a_sink_path_that_cannot_be_written_is_one_line_and_exit_2(bashgym_cli, tmp_path):
    """A path given in the command is a mistake in the command (exit 2), said as one line that
    names it and where to look; a parent that is a file says so, not mkdir's 'File exists'."""
    result = bashgym_cli(
        "run", "-p", "samplers", "-n", "2", "-k", "parquet",
        "--set", "sink.path=/proc/no-such-dir/x.parquet", "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot write '/proc/no-such-dir" in errors[0], result.output
    assert "sinks' path options" in errors[0] and "Traceback" not in result.output
    (tmp_path / "afile").write_text("")
    under_a_file = bashgym_cli(
        "run", "-p", "samplers", "-n", "2", "-k", "parquet",
        "--set", f"sink.path={tmp_path / 'afile' / 'x.parquet'}", "--out", str(tmp_path / "r2"),
    )  # fmt: skip
    assert under_a_file.exit_code == 2, under_a_file.output
    said = " ".join(under_a_file.stderr.split())  # in os_problem's words, as every command
    afile = tmp_path / "afile"
    assert f"error: cannot write '{afile}': it is a file, where a folder is needed" in said, said


def test_the_summary_is_never_broken_at_80_columns_when_piped(bashgym_cli, tmp_path, monkeypatch):
    """Piped (no terminal, 80 columns), the `done` line keeps its drop reasons on it and each
    written path is whole on its line: a log is grepped and a path copied."""
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / ("a-run-directory-deep-enough-to-pass-eighty-columns" * 2)
    transcripts = Path(__file__).parents[4] / "examples" / "transcripts"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", f"source.path={transcripts}",
        "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    done = next(line for line in lines if line.startswith("done "))
    assert done.endswith("nemo-jsonl: trace did not succeed (api_error)"), done
    assert f"  nemo-jsonl: {out / 'nemo-jsonl' / 'train.jsonl'}" in lines, lines
