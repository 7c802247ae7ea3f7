"""resolve() checks names and options against the plugins' models, before any work."""

from __future__ import annotations

import pytest

from bashgym.plugins import PluginHost
from bashgym.runspec import RunConfigError, RunSpec, StepSpec, resolve


def test_resolve_validates_options_against_plugin_models(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the files source checks its path is there
    (tmp_path / "x.csv").write_text("a\n1\n")
    (tmp_path / "x").write_text("a\n1\n")
    registry = PluginHost().registry
    spec = RunSpec(
        source=StepSpec(plugin="files", options={"path": "x.csv", "colour": "red"}),
        sinks=[StepSpec(plugin="parquet")],
    )
    with pytest.raises(RunConfigError) as exc:
        resolve(spec, registry)
    assert "source 'files': colour: unknown option" in str(exc.value)
    assert "Valid options: path, format, map, columns, provenance" in str(exc.value)
    bad_type = spec.model_copy(
        update={
            "source": StepSpec(plugin="files", options={"path": "x"}),
            "sinks": [StepSpec(plugin="parquet", options={"shard_rows": "many"})],
        }
    )
    with pytest.raises(RunConfigError, match="sink 'parquet': shard_rows"):
        resolve(bad_type, registry)
    with pytest.raises(RunConfigError, match="needs at least one sink"):
        resolve(RunSpec(source=StepSpec(plugin="files", options={"path": "x"})), registry)
    with pytest.raises(RunConfigError, match="a source, a pipeline, or both"):
        resolve(RunSpec(sinks=[StepSpec(plugin="parquet")]), registry)


def test_a_typo_names_the_option_or_table_it_may_be():
    """An unknown option or table close to a real one says which (a new user's typo), and an
    unknown table is reported before the run's other problems, which it may be the cause of."""
    registry = PluginHost().registry
    source = StepSpec(plugin="files", options={"pth": "x.csv"})
    with pytest.raises(RunConfigError, match=r"pth: unknown option \(did you mean 'path'\?\)"):
        resolve(RunSpec(source=source, sinks=[StepSpec(plugin="parquet")]), registry)
    with pytest.raises(RunConfigError, match=r"zzz: unknown option\. Valid"):  # nothing near
        resolve(
            RunSpec(
                source=StepSpec(plugin="files", options={"path": "x", "zzz": "red"}),
                sinks=[StepSpec(plugin="parquet")],
            ),
            registry,
        )
    typo = RunSpec.model_validate({"pipline": {"plugin": "samplers"}, "sinks": [{"plugin": "x"}]})
    with pytest.raises(RunConfigError) as exc:
        resolve(typo, registry)
    assert "unknown table [pipline] in the run (did you mean 'pipeline'?)" in str(exc.value)
    assert "[sinks]" in str(exc.value) and "[designer]" in str(exc.value)
    table = RunSpec(pipeline=StepSpec(plugin="samplers"), sinks=[StepSpec(plugin="parquet")])
    table = table.model_copy(update={"tables": {"designer": {"buffer_sz": 3}}})
    with pytest.raises(RunConfigError, match=r"buffer_sz: unknown option \(did you mean 'buf"):
        resolve(table, registry)


def test_num_records_flows_into_pipeline_options():
    spec = RunSpec(
        pipeline=StepSpec(plugin="samplers"), sinks=[StepSpec(plugin="parquet")], num_records=7
    )
    assert resolve(spec, PluginHost().registry).pipeline.options.num_records == 7


def test_a_router_stands_for_the_executor_and_its_executors_must_be_installed(
    tmp_path, monkeypatch
):
    """A run may name a router instead of an executor: its first pick is the run's executor,
    the router is a step of its own (in run.toml), and every executor it names is checked."""
    from bashgym_testing import ScriptedExecutor

    from bashgym import hookimpl
    from bashgym.contracts import Options, Route, Router
    from bashgym.runspec import resolved_toml

    class PairOptions(Options):
        student: str = "cheap"
        teacher: str = "strong"

    class Pair(Router[PairOptions]):
        def route(self, task, options, run):
            return Route(options.student, "always", escalate_to=options.teacher)

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("cheap", ScriptedExecutor())
            register("strong", ScriptedExecutor())

        @hookimpl
        def register_routers(self, register):
            register("pair", Pair())

    monkeypatch.chdir(tmp_path)  # the prompts source checks its path is there
    (tmp_path / "t.txt").write_text("say hi\n")
    host = PluginHost()
    host.add(Plugin(), "pair-plugin")
    spec = RunSpec(
        source=StepSpec(plugin="prompts", options={"path": "t.txt"}),
        router=StepSpec(plugin="pair"),
        environment=StepSpec(plugin="local"),
        sinks=[StepSpec(plugin="parquet")],
    )
    resolved = resolve(spec, host.registry)
    assert resolved.executor.name == "cheap" and resolved.router.name == "pair"
    assert "router" in [s.role for s in resolved.steps()]
    assert '[router]\nplugin = "pair"' in resolved_toml(resolved, tmp_path)
    missing = spec.model_copy(update={"router": StepSpec(plugin="pair", options={"teacher": "x"})})
    with pytest.raises(RunConfigError, match="router 'pair' names executors cheap, x; installed"):
        resolve(missing, host.registry)
    with pytest.raises(RunConfigError, match="needs tasks: add --source"):
        resolve(spec.model_copy(update={"source": None}), host.registry)


def test_a_backend_is_a_step_of_its_own_and_not_part_of_a_runs_identity(tmp_path):
    """`--backend NAME`: its options are checked like any step's, it is kept in run.toml (a
    repeated run runs where it ran), and where a run runs does not change what it makes, so a
    run started in this process may resume on a cluster (the config hash leaves it out)."""
    from bashgym.resume import config_hash
    from bashgym.runspec import resolved_toml
    from bashgym.settings import load_settings

    host = PluginHost()
    if "ray" not in host.registry.names("backends"):
        pytest.skip("no backend is installed (bashgym-backends-ray)")
    base = RunSpec(pipeline=StepSpec(plugin="samplers"), sinks=[StepSpec(plugin="parquet")])
    spec = base.model_copy(update={"backend": StepSpec(plugin="ray", options={"shards": 3})})
    resolved = resolve(spec, host.registry)
    assert resolved.backend is not None and resolved.backend.options.shards == 3
    assert [s.role for s in resolved.steps()] == ["pipeline", "backend", "sink"]
    assert "[backend]" in resolved_toml(resolved, tmp_path) and "shards = 3" in resolved_toml(
        resolved, tmp_path
    )
    settings = load_settings(host.registry.settings_tables)
    assert config_hash(resolved, settings) == config_hash(resolve(base, host.registry), settings)
    bad = base.model_copy(update={"backend": StepSpec(plugin="ray", options={"shards": 0})})
    with pytest.raises(RunConfigError, match="backend 'ray': shards"):
        resolve(bad, host.registry)
    with pytest.raises(RunConfigError, match="unknown backend 'rya'"):
        resolve(base.model_copy(update={"backend": StepSpec(plugin="rya")}), host.registry)


def test_a_bad_value_is_said_plainly_without_the_list_of_options():
    """A value a validator refused reads as the validator's words (no pydantic 'Value error, ');
    the list of valid option names comes only with an unknown option, where it helps."""
    spec = RunSpec(
        source=StepSpec(plugin="claude-code", options={"min_turns": 5, "max_turns": 2}),
        sinks=[StepSpec(plugin="parquet")],
    )
    with pytest.raises(RunConfigError) as exc:
        resolve(spec, PluginHost().registry)
    assert str(exc.value) == "source 'claude-code': value: min_turns is greater than max_turns"


def test_two_sinks_of_one_kind_writing_the_same_files_are_refused(tmp_path):
    """Two [[sinks]] nemo-jsonl tables (tool-use and chat) both wrote RUN_DIR/nemo-jsonl: the
    first's lines were lost and the counts added up twice. Each needs its own path."""
    registry = PluginHost().registry
    traces = StepSpec(plugin="claude-code", options={"path": str(tmp_path)})

    def sinks(*specs: StepSpec) -> RunSpec:
        return RunSpec(source=traces, sinks=list(specs))

    chat = StepSpec(plugin="nemo-jsonl", options={"format": "chat"})
    with pytest.raises(RunConfigError, match="two nemo-jsonl sinks would write the same files"):
        resolve(sinks(StepSpec(plugin="nemo-jsonl"), chat), registry)
    with pytest.raises(RunConfigError, match="two parquet sinks would write the same files"):
        resolve(sinks(StepSpec(plugin="parquet"), StepSpec(plugin="parquet")), registry)
    apart = StepSpec(plugin="nemo-jsonl", options={"format": "chat", "path": str(tmp_path / "c")})
    assert len(resolve(sinks(StepSpec(plugin="nemo-jsonl"), apart), registry).sinks) == 2
    both = sinks(StepSpec(plugin="nemo-jsonl"), StepSpec(plugin="parquet"))
    assert [s.name for s in resolve(both, registry).sinks] == ["nemo-jsonl", "parquet"]


def test_sinks_with_no_path_option_may_be_used_twice():
    """A sink whose options have no `path` (a webhook's `url`) writes no files of the run's:
    two of them (two urls) are not refused with advice it cannot follow."""
    from pydantic import Field

    from bashgym import hookimpl
    from bashgym.contracts import Options, Sink, Written

    class HookOptions(Options):
        url: str = Field(description="where to post")

    class Webhook(Sink[HookOptions]):
        def write(self, dataset, options, run, output_format):
            return Written([], len(dataset))

    class Plugin:
        @hookimpl
        def register_sinks(self, register):
            register("webhook", Webhook())

    host = PluginHost()
    host.add(Plugin(), "webhook-plugin")
    hooks = [StepSpec(plugin="webhook", options={"url": u}) for u in ("http://a", "http://b")]
    spec = RunSpec(source=StepSpec(plugin="prompts", options={"path": "README.md"}), sinks=hooks)
    assert [s.name for s in resolve(spec, host.registry).sinks] == ["webhook", "webhook"]
