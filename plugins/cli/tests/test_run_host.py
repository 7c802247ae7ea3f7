"""A run loads only the plugins it uses, read from the command index's plugin catalogue; every
plugin when the index is missing or a name is not in it (so the error lists every valid name);
`bashgym plugins` still lists them all."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import subprocess
import sys
import textwrap

import pytest
import typer
from bashgym_cli.app import build_app
from bashgym_cli.index import catalogue, index_path, write_index
from bashgym_cli.runs import plugins_for, resolve_spec

from bashgym.plugins import DEFAULT_PLUGINS, GROUP, PluginHost, current_host, use_host
from bashgym.runspec import RunSpec, StepSpec

INSTALLED = sorted({ep.name for ep in metadata.entry_points(group=GROUP)})
needs_all = pytest.mark.skipif(
    not {"sources-files", "sources-claude-code", "pipelines-samplers", "sinks-parquet"}
    <= set(INSTALLED),
    reason="needs the workspace's plugins installed",
)


@pytest.fixture
def indexed(tmp_path, monkeypatch):
    """An index of every installed plugin in a temporary cache, and no current host."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("BASHGYM_LOAD_PLUGINS", raising=False)
    previous = use_host(None)
    whole = PluginHost()
    key, path = index_path()
    write_index(path, key, typer.main.get_command(build_app(whole)), whole)
    yield
    use_host(previous)


def files_to_parquet(repo, **update) -> RunSpec:
    spec = RunSpec(
        source=StepSpec(plugin="files", options={"path": str(repo / "examples" / "tasks.csv")}),
        pipeline=StepSpec(plugin="samplers"),
        sinks=[StepSpec(plugin="parquet")],
    )
    return spec.model_copy(update=update)


@needs_all
def test_the_catalogue_records_hooks_names_options_and_tables(indexed):
    cat = catalogue()
    assert cat is not None and sorted(cat["plugins"]) == INSTALLED
    files = cat["plugins"]["sources-files"]["registers"]["sources"]["files"]
    assert "path" in files["options"]
    samplers = cat["plugins"]["pipelines-samplers"]["registers"]["pipelines"]["samplers"]
    assert samplers["runner"] == "datadesigner" and "num_records" in samplers["options"]
    assert "on_event" in cat["plugins"]["observers-progress"]["hooks"]
    assert "register_settings" in cat["plugins"]["work-tasks"]["hooks"]
    assert cat["tables"]["tasks"] == {
        "plugin": "work-tasks",
        "keys": ["concurrency", "task_timeout_s", "budget_usd", "check_timeout_s"],
    }  # fmt: skip


@needs_all
def test_a_run_loads_only_the_plugins_it_uses(indexed, repo):
    host, _, resolved = resolve_spec(lambda: files_to_parquet(repo))
    assert current_host() is host
    assert [s.name for s in resolved.steps()] == ["files", "samplers", "parquet"]
    loaded = set(host.infos)
    assert {"sources-files", "pipelines-samplers", "sinks-parquet"} <= loaded
    assert loaded >= DEFAULT_PLUGINS  # model access, scrubbing, observers, task running, ...
    assert "runners-datadesigner" in loaded  # the runner samplers names
    assert "observers-progress" in loaded and "commands-report" in loaded  # on_run_end
    for unused in ("sources-claude-code", "sinks-hf-hub", "pipelines-coding-agent",
                   "executors-student", "environments-local", "commands-pipeline",
                   "trl", "nemo-customizer"):  # fmt: skip  # trainers: `bashgym train` only
        assert unused not in loaded


@needs_all
def test_an_executor_run_loads_every_environment(indexed, repo):
    spec = RunSpec(
        source=StepSpec(plugin="prompts", options={"path": "tasks.txt"}),
        executor=StepSpec(plugin="student"),
        sinks=[StepSpec(plugin="nemo-jsonl")],
    )
    needed, unknown = plugins_for(spec, catalogue())  # type: ignore[arg-type]
    assert unknown == []
    assert {"environments-local", "environments-bubblewrap", "executors-student"} <= needed
    assert "executors-claude" not in needed and "sources-files" not in needed


@needs_all
def test_a_pipeline_that_runs_code_loads_every_environment(indexed, repo):
    """csv-triangulation runs its teachers' code in an environment without any executor: a run
    of the README's example once found none ('local is not installed')."""
    spec = RunSpec(pipeline=StepSpec(plugin="csv-triangulation"), judges=[
        StepSpec(plugin="triangulation")], sinks=[StepSpec(plugin="nemo-jsonl")])  # fmt: skip
    needed, unknown = plugins_for(spec, catalogue())  # type: ignore[arg-type]
    assert unknown == []
    assert {"environments-local", "environments-bubblewrap"} <= needed
    samplers = plugins_for(files_to_parquet(repo), catalogue())[0]  # type: ignore[arg-type]
    assert "environments-local" not in samplers


@needs_all
def test_an_unknown_name_loads_every_plugin_and_lists_every_valid_one(indexed, repo, capsys):
    with pytest.raises(typer.Exit) as exited:
        resolve_spec(lambda: files_to_parquet(repo, source=StepSpec(plugin="filez")))
    assert exited.value.exit_code == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "unknown source 'filez'. Did you mean 'files'?" in error
    sources = sorted(registered for registered in current_host().registry.names("sources"))
    assert "claude-code" in sources
    assert f"Valid sources: {', '.join(sources)}" in error
    assert set(current_host().infos) >= set(INSTALLED)


@needs_all
def test_without_an_index_every_plugin_loads(tmp_path, monkeypatch, repo):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("BASHGYM_LOAD_PLUGINS", raising=False)
    previous = use_host(None)
    try:
        host, _, _ = resolve_spec(lambda: files_to_parquet(repo))
        assert set(host.infos) >= set(INSTALLED)
    finally:
        use_host(previous)


@needs_all
def test_a_name_from_a_plugin_file_needs_no_fallback(indexed, repo, tmp_path):
    plugin = tmp_path / "my_sink.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from bashgym import hookimpl
            from bashgym.contracts import NoOptions, Sink

            class Mine(Sink[NoOptions]):
                def write(self, dataset, options, run, output_format):
                    raise NotImplementedError

            @hookimpl
            def register_sinks(register):
                register("mine", Mine)
            """
        )
    )
    spec = files_to_parquet(repo, sinks=[StepSpec(plugin="mine")], plugins=[str(plugin)])
    host, _, resolved = resolve_spec(lambda: spec)
    assert resolved.sinks[0].name == "mine" and "my_sink" in host.infos
    assert "sources-claude-code" not in host.infos and "sinks-parquet" not in host.infos


# Runs `main()`; then prints, on the last line of stderr, the plugin modules the process imported.
PROBE = textwrap.dedent(
    """
    import json, sys
    from bashgym_cli import main
    sys.argv = ["bashgym", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("bashgym_"))), file=sys.stderr)
    """
)


@needs_all
def test_the_command_line_run_imports_only_its_plugins_and_plugins_lists_all(tmp_path, repo):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("BASHGYM_LOAD_PLUGINS", None)

    def bashgym(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args], env=env, cwd=tmp_path, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
        return done, json.loads(done.stderr.strip().splitlines()[-1])

    bashgym("--help")  # builds the index
    tasks = str(repo / "examples" / "tasks.csv")
    done, modules = bashgym(
        "run", "-s", "files", "--set", f"source.path={tasks}", "-k", "parquet", "-n", "2",
        "-o", str(tmp_path / "run"),
    )  # fmt: skip
    assert "done" in done.stdout, done.stderr
    assert "bashgym_sources_files" in modules and "bashgym_sinks_parquet" in modules
    for unused in ("bashgym_sources_claude_code", "bashgym_sinks_hf_hub",
                   "bashgym_pipelines_coding_agent", "bashgym_commands_pipeline"):  # fmt: skip
        assert unused not in modules

    listed, _ = bashgym("plugins", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert sorted(rows) == INSTALLED

    # a refused run lists every choice, not only those of the plugins it loaded
    no_sink, _ = bashgym("run", "-s", "files", "--set", f"source.path={tasks}")
    assert "a run needs at least one sink" in no_sink.stderr, no_sink.stderr  # (exit caught)
    assert "(sinks: none)" not in no_sink.stderr
    assert "parquet" in no_sink.stderr and "nemo-jsonl" in no_sink.stderr
    assert rows["commands-run"]["registers"]["commands"] == ["run"]
    assert rows["commands-pipeline"]["registers"]["commands"]
