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
