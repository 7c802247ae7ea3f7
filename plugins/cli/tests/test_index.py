"""`bashgym` starts at once: `--version` without Typer, `--help` and completion from the cached
command index without importing a plugin, a command's plugins loaded when it runs; the index is
rebuilt when what made it changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import typer
from bashgym_cli.app import root_app
from bashgym_cli.index import index_path, lazy_group, read_index, write_index
from typer.testing import CliRunner

# Runs `main()` with the given argv; then prints, on the last line of stderr, the plugin modules
# and heavy libraries the process imported.
PROBE = textwrap.dedent(
    """
    import sys
    from bashgym_cli import main
    sys.argv = ["bashgym", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    plugins = sorted(
        m for m in sys.modules
        if m.startswith("bashgym_") and "." not in m and m != "bashgym_cli"
    )
    print(json.dumps({"plugins": plugins, "typer": "typer" in sys.modules,
                      "pandas": "pandas" in sys.modules}), file=sys.stderr)
    """
).replace("import sys", "import json, sys", 1)


def bashgym(tmp_path, *args: str, env: dict[str, str] | None = None) -> tuple[str, dict]:
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
    environ.pop("BASHGYM_LOAD_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=environ, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


def test_version_imports_neither_typer_nor_any_plugin(tmp_path):
    out, loaded = bashgym(tmp_path, "--version")
    assert out.strip().startswith("bashgym ")
    assert loaded == {"plugins": [], "typer": False, "pandas": False}


def test_help_comes_from_the_index_and_a_command_loads_its_plugins(tmp_path):
    first, loaded = bashgym(tmp_path, "--help")  # no index yet: built from every plugin
    assert "run" in first and "plugins" in first and loaded["plugins"]
    assert len(list((tmp_path / "cache" / "bashgym").glob("commands-*.json"))) == 1

    again, loaded = bashgym(tmp_path, "--help")
    assert again == first
    assert loaded == {"plugins": [], "typer": True, "pandas": False}

    names, loaded = bashgym(
        tmp_path, env={"_BASHGYM_COMPLETE": "complete_bash", "COMP_WORDS": "bashgym pl",
                       "COMP_CWORD": "1"},
    )  # fmt: skip
    assert names.split() == ["plugins"] and loaded["plugins"] == []

    listed, loaded = bashgym(tmp_path, "plugins", "--json")  # dispatch loads the plugins
    rows = {row["name"]: row for row in json.loads(listed)}
    assert rows["commands-run"]["registers"]["commands"] == ["run"]
    assert "bashgym_commands_inspect" in loaded["plugins"]


def test_an_index_is_stale_when_a_file_it_was_built_from_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key, path = index_path()
    app = root_app()

    @app.command()
    def hello() -> None:
        """Say hello."""

    write_index(path, key, typer.main.get_command(app))
    entries = read_index(path, key)
    assert entries is not None and [e["name"] for e in entries] == ["hello"]
    assert read_index(path, "another key") is None

    data = json.loads(path.read_text())
    source = tmp_path / "plugin.py"
    source.write_text("")
    data["files"] = {str(source): source.stat().st_mtime_ns}
    path.write_text(json.dumps(data))
    assert read_index(path, key) is not None
    os.utime(source, ns=(0, source.stat().st_mtime_ns + 1_000_000))
    assert read_index(path, key) is None
    source.unlink()
    assert read_index(path, key) is None

    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "sinks-parquet")
    assert index_path()[0] != key  # narrowing the plugins is another index


def test_the_lazy_group_lists_stand_ins_and_runs_the_real_command():
    loads = []

    def load(name, plugin):
        loads.append((name, plugin))
        real = root_app()

        @real.command()
        def hello(name: str) -> None:
            """Say hello."""
            typer.echo(f"hello {name}")

        return typer.main.get_command(real).commands

    entries = [
        {"name": "hello", "help": "Say hello.", "short_help": None, "hidden": False,
         "deprecated": False, "panel": None, "plugin": "greetings"},
    ]  # fmt: skip
    runner = CliRunner()
    listed = runner.invoke(root_app(cls=lazy_group(entries, load)), ["--help"])
    assert "Say hello." in listed.output and loads == []
    ran = runner.invoke(root_app(cls=lazy_group(entries, load)), ["hello", "you"])
    assert ran.output == "hello you\n" and loads == [("hello", "greetings")]
    missing = runner.invoke(root_app(cls=lazy_group(entries, load)), ["helo"])
    assert missing.exit_code == 2 and "Did you mean 'hello'?" in missing.output
