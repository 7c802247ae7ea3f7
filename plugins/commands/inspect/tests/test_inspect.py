"""`bashgym plugins`, `bashgym options` and `bashgym config show`."""

from __future__ import annotations

import json
import os
import re

import pytest
from bashgym_commands_inspect import mask_secrets
from pydantic import Field as PydanticField

from bashgym import hookimpl
from bashgym.contracts import Options, Source

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


def set_columns(monkeypatch, columns: str) -> None:
    """The width the CLI prints at, as `COLUMNS=N bashgym ...`: bashgym_cli's `out` and `err`
    read COLUMNS each time they print (plugins/cli/tests/test_console.py), so setting it is all."""
    monkeypatch.setenv("COLUMNS", columns)


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
    set_columns(monkeypatch, "80")
    for role, name in (("sink", "nemo-jsonl"), ("source", "claude-code"), ("sink", "parquet")):
        assert options_whole(bashgym_cli, role, name)
    text = bashgym_cli("options", "sink", "nemo-jsonl").stdout  # a long name, a long default
    assert "sink.default_system_prompt" in text.splitlines()


@pytest.mark.slow  # loads every installed plugin (~15 s on a busy 2-core machine)
def test_listings_never_cut_a_name_at_80_columns(bashgym_cli, monkeypatch):
    """Piped (`| cat`: no terminal, 80 columns), every option of every registered plugin and
    every plugin and distribution name comes out whole; descriptions wrap instead."""
    set_columns(monkeypatch, "80")
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
    set_columns(monkeypatch, "200")
    text = bashgym_cli("options", "source", "files").stdout
    assert "┃ option" in text and whole("source.provenance", text)


def test_config_show_never_wraps_a_line(bashgym_cli, bashgym_env, monkeypatch):
    set_columns(monkeypatch, "80")
    deep = bashgym_env.workdir / ("a-rather-long-folder-name-" * 5) / "cache"
    monkeypatch.setenv("BASHGYM_CACHE_DIR", str(deep))
    text = bashgym_cli("config", "show")
    assert text.exit_code == 0, text.output
    assert f'cache_dir = "{deep}"' in text.stdout.splitlines()  # one line: still TOML


def cell_words(option: dict) -> list[str]:
    """The words of an option's type, default and description cells, as the text shows them."""
    default = "required" if option.get("required") else json.dumps(option["default"])
    return f"{option['type']} {default} {option['description']}".split()


@pytest.mark.parametrize("columns", ["60", "80", "100", "132"])
def test_options_wrap_between_words_never_inside_one(bashgym_cli, monkeypatch, columns):
    """A default or a word of a description is copied too: at any width each comes out whole
    (`"instruction-response"`, `<column>.<criterion>.score.`, `$CLAUDE_CONFIG_DIR/projects,`
    were cut at 80 columns), in a table when its longest words fit, else in blocks."""
    set_columns(monkeypatch, columns)
    for role, name in (("judge", "llm-rubric"), ("source", "claude-code"), ("sink", "nemo-jsonl")):
        text = bashgym_cli("options", role, name).stdout
        assert all(len(line) <= int(columns) for line in text.splitlines()), (role, name)
        doc = json.loads(bashgym_cli("options", role, name, "--json").stdout)
        for option in doc["options"]:
            for word in cell_words(option):
                assert whole(word, text), (columns, option["option"], word)


def test_a_type_names_each_alternative_once(bashgym_cli):
    """`date | datetime | None` is two JSON-schema strings and a null: `str | null`."""
    doc = json.loads(bashgym_cli("options", "source", "claude-code", "--json").stdout)
    types = {o["option"]: o["type"] for o in doc["options"]}
    assert types["source.since"] == types["source.until"] == "str | null"
    assert types["source.limit"] == "int | null"


def test_a_default_factory_shows_its_value_not_null(bashgym_cli, monkeypatch):
    """A field with a default_factory has no default in the JSON schema: it was shown as
    `null`, a value these options do not even accept (their type has no null)."""
    expected = {("sink", "nemo-jsonl", "keep_fields"): [],
                ("environment", "local", "pass_env"): [],
                ("runtime", "embedded", "threads"): os.cpu_count()}  # fmt: skip
    for (role, name, key), default in expected.items():
        doc = json.loads(bashgym_cli("options", role, name, "--json").stdout)
        option = {o["option"]: o for o in doc["options"]}[f"{role}.{key}"]
        assert option["default"] == default and "null" not in option["type"], option
    set_columns(monkeypatch, "200")
    text = bashgym_cli("options", "sink", "nemo-jsonl").stdout
    row = next(line for line in text.splitlines() if "sink.keep_fields" in line)
    assert re.search(r"│ list\[str\]\s+│ \[\]\s+│", row), row


def test_a_plugin_without_options_says_so(bashgym_cli):
    result = bashgym_cli("options", "scrubber", "secrets")
    assert result.exit_code == 0, result.output
    assert "scrubber secrets has no options" in result.stdout
    assert "option" not in result.stdout.replace("has no options", "")  # no table of headers
    doc = json.loads(bashgym_cli("options", "scrubber", "secrets", "--json").stdout)
    assert doc["options"] == []


class RequiredOptions(Options):
    path: str = PydanticField(description="Where the rows are.")
    mode: str = PydanticField(default="required", description="A default that reads 'required'.")


class RequiredSource(Source[RequiredOptions]):
    """Rows from nowhere, with a required option."""

    def open(self, options, run):
        return []


def test_json_marks_a_required_option_apart_from_a_default_string(bashgym_cli, register_plugin):
    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register("needs-path", RequiredSource())

    register_plugin(Plugin(), "needs-path-plugin")
    doc = json.loads(bashgym_cli("options", "source", "needs-path", "--json").stdout)
    options = {o["option"]: o for o in doc["options"]}
    assert options["source.path"]["required"] is True and options["source.path"]["default"] is None
    assert options["source.mode"]["required"] is False
    assert options["source.mode"]["default"] == "required"
    text = bashgym_cli("options", "source", "needs-path").stdout
    assert re.search(r"source\.path\s+│ str\s+│ required ", text), text
    assert re.search(r'source\.mode\s+│ str\s+│ "required" ', text), text


def test_options_trainer_lists_what_bashgym_train_sets(bashgym_cli, bashgym_host):
    """`bashgym plugins` lists trainers: `options trainer trl` shows every key of the
    trainer's options model (what `bashgym train --set trainer.KEY=VALUE` takes), and how."""
    result = bashgym_cli("options", "trainer", "trl")
    assert result.exit_code == 0, result.output
    assert "bashgym train --trainer trl --set trainer.KEY=VALUE" in result.stdout
    doc = json.loads(bashgym_cli("options", "trainer", "trl", "--json").stdout)
    model = bashgym_host.registry.get("trainers", "trl").obj.Options
    assert [o["option"] for o in doc["options"]] == [f"trainer.{k}" for k in model.model_fields]
    assert all(whole(o["option"], result.stdout) for o in doc["options"])
    bad = bashgym_cli("options", "trainers", "trl")
    assert bad.exit_code == 2 and "trainer" in bad.output.split("valid roles:")[1]


@pytest.mark.parametrize("columns", ["80", "200"])
def test_no_line_ends_in_spaces(bashgym_cli, monkeypatch, columns):
    """Piped into a file or a diff, padded lines show: blocks, tables and wrapped headings
    end at their last character."""
    set_columns(monkeypatch, columns)
    outputs = [bashgym_cli("plugins").stdout]
    for role, name in (("judge", "llm-rubric"), ("source", "claude-code"), ("sink", "parquet")):
        outputs.append(bashgym_cli("options", role, name).stdout)
    for text in outputs:
        assert text.strip()
        padded = [line for line in text.splitlines() if line != line.rstrip()]
        assert not padded, padded[:3]


def test_runtime_options_say_which_a_run_sets(bashgym_cli, bashgym_env):
    """A run has no `--set runtime.*` (the run refuses the table): the runtime's options are
    marked, and the one a model alias carries (adapter) names where a run sets it."""
    doc = json.loads(bashgym_cli("options", "runtime", "embedded", "--json").stdout)
    setting = {o["option"]: o["run_setting"] for o in doc["options"]}
    assert setting["runtime.adapter"] == "models.NAME.adapter"
    assert setting["runtime.threads"] is None and setting["runtime.ctx"] is None
    text = bashgym_cli("options", "runtime", "embedded").stdout
    assert "there is no --set runtime.*" in " ".join(text.split())
    assert text.count("(not set by a run)") == sum(v is None for v in setting.values())
    (bashgym_env.workdir / "rows.csv").write_text("prompt\nhi\n")
    run = bashgym_cli("run", "-s", "files", "--set", "source.path=rows.csv", "-k", "parquet",
                      "--set", "runtime.threads=1")  # fmt: skip
    assert run.exit_code == 2 and "unknown table [runtime]" in run.output
