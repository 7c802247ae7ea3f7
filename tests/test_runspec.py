"""resolve() checks names and options against the plugins' models, before any work."""

from __future__ import annotations

import pytest

from bashgym.plugins import PluginHost
from bashgym.runspec import RunConfigError, RunSpec, StepSpec, resolve


def test_resolve_validates_options_against_plugin_models():
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


def test_num_records_flows_into_pipeline_options():
    spec = RunSpec(
        pipeline=StepSpec(plugin="samplers"), sinks=[StepSpec(plugin="parquet")], num_records=7
    )
    assert resolve(spec, PluginHost().registry).pipeline.options.num_records == 7


def test_a_router_stands_for_the_executor_and_its_executors_must_be_installed(tmp_path):
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
