"""Plugin discovery, BASHGYM_LOAD_PLUGINS, conflicts and broken plugins."""

from __future__ import annotations

import json
import re
import types

import pytest

from bashgym import hookimpl
from bashgym.contracts import NoOptions, Sink, Source
from bashgym.plugins import PluginHost
from bashgym.registry import PluginConflictError, UnknownNameError

FIRST_PARTY = {
    "sources-files": ("sources", "files"),
    "pipelines-samplers": ("pipelines", "samplers"),
    "sinks-parquet": ("sinks", "parquet"),
}


class ListSource(Source):
    """Rows from a list."""

    def open(self, options, run):
        return [{"x": 1}]


def make_plugin(name: str, **registrations):
    """A module-like plugin object registering `kind=[names]`."""
    module = types.ModuleType(name)

    def hook_for(kind, names):
        def register_hook(register):
            for n in names:
                register(n, ListSource() if kind == "sources" else _NullSink())

        register_hook.__name__ = f"register_{kind}"
        return hookimpl(register_hook)

    for kind, names in registrations.items():
        setattr(module, f"register_{kind}", hook_for(kind, names))
    return module


class _NullSink(Sink):
    def write(self, dataset, options, run, output_format):
        return []


def test_entry_points_load_first_party_plugins_with_versions():
    host = PluginHost()
    for name in FIRST_PARTY:
        info = host.infos[name]
        assert info.distribution == f"bashgym-{name}"
        assert info.version == "0.1.0"
        assert info.error is None
    registry = host.registry
    assert registry.get("sources", "files").plugin == "sources-files"
    assert host.infos["sinks-parquet"].registers["sinks"] == ["parquet"]
    assert host.infos["sources-files"].hooks == ["register_sources"]


def test_load_plugins_env_narrows_and_empty_means_only_the_defaults(monkeypatch):
    # The default scrubber loads whatever the narrowing: narrowing never turns scrubbing off.
    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "sources-files, bashgym-sinks-parquet")
    defaults = {
        "models-providers", "scrubbers-secrets", "commands-run", "commands-inspect",
        "observers-progress", "work-tasks", "work-rounds",
    }  # fmt: skip
    assert set(PluginHost().infos) == {"sources-files", "sinks-parquet", *defaults}
    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "")
    host = PluginHost()
    assert set(host.infos) == defaults
    with pytest.raises(UnknownNameError, match="none are installed"):
        host.registry.get("sources", "files")


def test_unknown_name_lists_valid_choices_and_suggests():
    with pytest.raises(UnknownNameError) as exc:
        PluginHost().registry.get("sources", "flies")
    assert "Did you mean 'files'?" in str(exc.value)
    assert re.search(r"Valid sources: [a-z, -]*\bfiles\b", str(exc.value))


def test_same_name_from_two_plugins_is_an_error_naming_both():
    host = PluginHost(entry_points=False)
    host.add(make_plugin("alpha", sources=["shared"]), "alpha")
    host.add(make_plugin("beta", sources=["shared"]), "beta")
    with pytest.raises(PluginConflictError) as exc:
        host.registry.check()
    assert "'alpha'" in str(exc.value) and "'beta'" in str(exc.value)
    assert "source 'shared'" in str(exc.value)


def test_a_failing_register_hook_disables_only_that_plugin():
    host = PluginHost(entry_points=False)
    broken = types.ModuleType("broken")

    @hookimpl
    def register_sources(register):
        raise RuntimeError("boom at register time")

    broken.register_sources = register_sources
    host.add(broken, "broken")
    host.add(make_plugin("fine", sources=["ok"]), "fine")
    assert host.registry.names("sources") == ["ok"]
    assert "boom at register time" in host.infos["broken"].error


def test_object_missing_its_method_is_rejected_by_name():
    host = PluginHost(entry_points=False)
    plugin = types.ModuleType("bad")

    @hookimpl
    def register_sinks(register):
        register("nowrite", object())

    plugin.register_sinks = register_sinks
    host.add(plugin, "bad")
    assert host.registry.names("sinks") == []
    assert "sink 'nowrite' lacks write()" in host.infos["bad"].error


def test_no_options_plugins_reject_any_option():
    with pytest.raises(Exception, match="extra"):
        NoOptions.model_validate({"x": 1})


def test_trace_rows_round_trip():
    from bashgym.records import Message, ToolCall, Trace, trace_from_row, trace_to_row

    trace = Trace(
        id="s1",
        system_prompt="sys",
        messages=[
            Message(role="user", content="ls"),
            Message(
                role="assistant", tool_calls=[ToolCall(id="c1", name="Bash", arguments='{"c":1}')]
            ),
            Message(role="tool", tool_call_id="c1", content="a.txt", extra={"odd": {}}),
        ],
    )
    row = trace_to_row(trace)
    assert row["num_tool_calls"] == 1 and row["num_messages"] == 3
    assert trace_from_row(row) == trace


class Clash:
    @hookimpl
    def register_commands(self, app):
        app.command("run")(lambda: None)  # taken by a built-in

        @app.command("hello")
        def hello() -> None:
            """Say hello."""
            print("hello")


def test_a_clashing_command_is_refused_by_name_and_the_rest_still_works(
    bashgym_cli, register_plugin
):
    register_plugin(Clash(), "clash")
    assert bashgym_cli("hello").stdout.strip() == "hello"
    listing = json.loads(bashgym_cli("plugins", "--json").stdout)
    (info,) = [p for p in listing if p["name"] == "clash"]
    assert info["registers"]["commands"] == ["hello"]
    assert "'run' refused" in info["error"]


def test_register_plugin_takes_an_installed_plugin_too(bashgym_cli, register_plugin):
    """The README's testing example registers the plugin module under test, which in a plugin's
    own repository is also installed through its entry point."""
    import bashgym_sinks_parquet

    register_plugin(bashgym_sinks_parquet)
    listing = json.loads(bashgym_cli("plugins", "--json").stdout)
    names = [p["name"] for p in listing if p.get("registers", {}).get("sinks") == ["parquet"]]
    assert names == ["bashgym_sinks_parquet"]


def test_models_check_of_an_alias_not_configured_checks_the_default(bashgym_cli, scripted_models):
    """As a run does: an alias with no [models.NAME] is the `default` alias."""
    result = bashgym_cli("models", "check", "nosuch")
    assert result.exit_code == 0, result.output
    assert "nosuch is not configured: runs use the `default` alias for it" in result.output
    assert "ok    nosuch:" in result.output


class BadInput:
    @hookimpl
    def register_commands(self, app):
        import typer

        from bashgym.contracts import InputError

        @app.command("check-file")
        def check_file(path: str) -> None:
            """Refuse every file: its input is always wrong."""
            raise InputError(f"{path} is not a config file")

        group = typer.Typer()

        @group.command("inspect")
        def inspect(path: str) -> None:
            """Refuse every file, from inside a command group."""
            raise InputError(f"{path} has no graph")

        app.add_typer(group, name="thing")


def test_a_plugin_commands_input_error_is_one_line_and_exit_2(bashgym_cli, register_plugin):
    register_plugin(BadInput(), "bad-input")
    for args, message in [
        (("check-file", "x.toml"), "x.toml is not a config file"),
        (("thing", "inspect", "y.parquet"), "y.parquet has no graph"),
    ]:
        result = bashgym_cli(*args)
        assert result.exit_code == 2, result.output
        assert f"error: {message}" in result.output
        assert "Traceback" not in result.output


def test_every_kind_has_its_registration_hook_and_no_hook_lacks_a_kind():
    """The kinds (`contracts.BASES`) and the registration hooks (`hookspecs.REGISTERS`) are two
    tables; a kind without its hook would break the registry, a hook without a kind registers
    nothing."""
    from bashgym import hookspecs
    from bashgym.contracts import KINDS

    assert set(hookspecs.REGISTERS) == set(KINDS)
    assert all(callable(getattr(hookspecs, f"register_{kind}")) for kind in KINDS)


def test_a_router_and_a_trainer_register_like_any_kind_and_a_router_names_its_executors():
    """A router says why (a Route) and which executors its options name (resolve() checks
    them); a trainer is a kind of its own (`register_trainers`)."""
    from pathlib import Path

    from bashgym.contracts import Options, Route, Router, Trained, Trainer
    from bashgym.plugins import PluginHost

    class PickOptions(Options):
        student: str = "student"
        teacher: str = "claude-cli"
        fallback_executor: str = "scripted"
        threshold: float = 0.5

    class Pick(Router[PickOptions]):
        def route(self, task, options, run):
            return Route(options.student, "always the student", score=1.0)

    class Fit(Trainer):
        def train(self, run_dir, out_dir, options, settings):
            return Trained(adapter=out_dir / "adapter")

    class Both:
        @hookimpl
        def register_routers(self, register):
            register("pick", Pick())

        @hookimpl
        def register_trainers(self, register):
            register("fit", Fit())

    host = PluginHost(entry_points=False)
    host.add(Both(), "both")
    router = host.registry.get("routers", "pick").obj
    assert router.executors(PickOptions()) == ["student", "claude-cli", "scripted"]
    assert router.route(None, PickOptions(), None) == Route("student", "always the student", 1.0)
    trained = host.registry.get("trainers", "fit").obj.train(Path("r"), Path("o"), None, None)
    assert trained.adapter == Path("o/adapter") and trained.metrics == {} and trained.report is None
