"""`bashgym plugins`, `bashgym options` and `bashgym config show`."""

from __future__ import annotations

import json
import re

import pytest
from bashgym_commands_inspect import mask_secrets

from bashgym import hookimpl
from bashgym.contracts import Source

FIRST_PARTY = ("sources-files", "pipelines-samplers", "sinks-parquet")


class ListSource(Source):
    """Rows from a list."""

    def open(self, options, run):
        return [{"x": 1}]


class SourcesClash:
    @hookimpl
    def register_sources(self, register):
        register("files", ListSource())


def test_register_plugin_fixture_and_plugins_json(bashgym_cli, register_plugin):
    class Extra:
        @hookimpl
        def register_sources(self, register):
            register("extra", ListSource)  # a class is instantiated

    register_plugin(Extra(), "extra-plugin")
    result = bashgym_cli("plugins", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["extra-plugin"]["registers"] == {"sources": ["extra"]}
    assert rows["sources-files"]["version"] == "0.1.0"
    assert set(FIRST_PARTY) <= set(rows)
    assert rows["commands-inspect"]["registers"]["commands"] == ["config", "options", "plugins"]


def test_options_command_shows_option_table(bashgym_cli):
    result = bashgym_cli("options", "sink", "parquet")
    assert result.exit_code == 0
    assert "sink.shard_rows" in result.stdout and "Rows per shard" in result.stdout
    bad = bashgym_cli("options", "sink", "parquett")
    assert bad.exit_code == 2 and "Did you mean 'parquet'" in bad.output
    doc = json.loads(bashgym_cli("options", "sink", "parquet", "--json").stdout)
    options = {o["option"]: o for o in doc["options"]}
    # a Literal shows its allowed values; defaults and types come from the JSON schema
    assert options["sink.compression"]["type"] == '"zstd" | "snappy" | "gzip" | "none"'
    assert options["sink.compression"]["default"] == "zstd"
    assert options["sink.shard_rows"]["type"] == "int | null"
    assert doc["plugin"] == "sinks-parquet"


def test_plugins_lists_everything_even_when_two_clash(bashgym_cli, register_plugin):
    register_plugin(SourcesClash(), "copycat")
    result = bashgym_cli("plugins", "--json")
    assert result.exit_code == 1  # the clash is an error...
    names = {p["name"] for p in json.loads(result.stdout)}
    assert {"copycat", "sources-files", "sinks-parquet"} <= names  # ...after the full list
    assert "registered by both" in result.stderr


def test_mask_secrets():
    masked = mask_secrets(
        {
            "api_key": "sk-abc",
            "api_key_env": "OPENAI_API_KEY",
            "params": {"auth_token": "t0k", "temperature": 0.2},
            "endpoint": "https://bob:hunter2@example.com:8443/v1",
        }
    )
    assert masked["api_key"] == "****" and masked["params"]["auth_token"] == "****"
    assert masked["api_key_env"] == "OPENAI_API_KEY"
    assert masked["params"]["temperature"] == 0.2
    assert masked["endpoint"] == "https://bob:****@example.com:8443/v1"


def test_config_show_masks_and_lists_files(bashgym_cli, bashgym_env):
    (bashgym_env.workdir / "bashgym.toml").write_text(
        '[models.remote]\nprovider = "openai-compatible"\n'
        'endpoint = "http://u:topsecret@127.0.0.1:8000/v1"\nparams = { api_key = "sk-inline" }\n'
    )
    result = bashgym_cli("config", "show", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["files"] == [str(bashgym_env.workdir / "bashgym.toml")]
    assert "topsecret" not in result.stdout and "sk-inline" not in result.stdout
    assert doc["settings"]["models"]["remote"]["endpoint"] == "http://u:****@127.0.0.1:8000/v1"
    text = bashgym_cli("config", "show")
    assert (
        text.exit_code == 0 and "topsecret" not in text.stdout and "[models.remote]" in text.stdout
    )
    (bashgym_env.workdir / "bashgym.toml").write_text("models = 3\n")
    bad = bashgym_cli("config", "show")
    assert bad.exit_code == 2 and "models" in bad.output


def whole(name: str, text: str) -> bool:
    """`name` appears unbroken, as a word of its own, on some line of `text`."""
    return re.search(rf"(^|[\s│]){re.escape(name)}($|[\s│])", text, re.MULTILINE) is not None


def options_whole(bashgym_cli, role: str, name: str) -> int:
    """Check `bashgym options ROLE NAME` at the current width; return how many options."""
    text = bashgym_cli("options", role, name)
    assert text.exit_code == 0, text.output
    assert "…" not in text.stdout, (role, name)
    assert all(len(line) <= 80 for line in text.stdout.splitlines())
    doc = json.loads(bashgym_cli("options", role, name, "--json").stdout)
    for option in doc["options"]:
        assert whole(option["option"], text.stdout), (name, option["option"])
    return len(doc["options"])


def test_options_never_cut_a_name_at_80_columns(bashgym_cli, monkeypatch):
    """Piped (`| cat`: no terminal, 80 columns) the options with the longest names and
    defaults come out whole, one name a line; descriptions wrap instead."""
    monkeypatch.setenv("COLUMNS", "80")
    for role, name in (("sink", "nemo-jsonl"), ("source", "claude-code"), ("sink", "parquet")):
        assert options_whole(bashgym_cli, role, name)
    text = bashgym_cli("options", "sink", "nemo-jsonl").stdout  # a long name, a long default
    assert "sink.default_system_prompt" in text.splitlines()


@pytest.mark.slow  # loads every installed plugin (~15 s on a busy 2-core machine)
def test_listings_never_cut_a_name_at_80_columns(bashgym_cli, monkeypatch):
    """Piped (`| cat`: no terminal, 80 columns), every option of every registered plugin and
    every plugin and distribution name comes out whole; descriptions wrap instead."""
    monkeypatch.setenv("COLUMNS", "80")
    listed = json.loads(bashgym_cli("plugins", "--json").stdout)
    plugins = bashgym_cli("plugins")
    assert plugins.exit_code == 0, plugins.output
    for row in listed:
        assert whole(row["name"], plugins.stdout), row["name"]
        assert whole(row["distribution"], plugins.stdout), row["distribution"]
    assert "…" not in plugins.stdout
    roles = {"sources": "source", "pipelines": "pipeline", "judges": "judge", "sinks": "sink",
             "executors": "executor", "environments": "environment"}  # fmt: skip
    checked = 0
    for row in listed:
        for kind, names in row["registers"].items():
            for name in names if kind in roles else []:
                checked += options_whole(bashgym_cli, roles[kind], name)
    assert checked > 50


def test_a_wide_table_still_shows_when_it_fits(bashgym_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    text = bashgym_cli("options", "source", "files").stdout
    assert "┃ option" in text and whole("source.provenance", text)


def test_config_show_never_wraps_a_line(bashgym_cli, bashgym_env, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    deep = bashgym_env.workdir / ("a-rather-long-folder-name-" * 5) / "cache"
    monkeypatch.setenv("BASHGYM_CACHE_DIR", str(deep))
    text = bashgym_cli("config", "show")
    assert text.exit_code == 0, text.output
    assert f'cache_dir = "{deep}"' in text.stdout.splitlines()  # one line: still TOML
