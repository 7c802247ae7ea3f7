"""A sink that cannot write what the run makes is refused before the run starts.

Before, `-p code-graph-pairs -k nemo-jsonl` ran the whole generation (2 min 12 s of model calls
on the embedded model for 5 rows; hours on a real one) and only then failed in the sink on
the triplet columns. Every sink says what it refuses (`Sink.refuses`) and `resolve` asks it
with the run's output format, so the mismatch is one line and exit 2, with no run folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bashgym import hookimpl
from bashgym.contracts import Options, Pipeline, Sink, Written
from bashgym.plugins import PluginHost
from bashgym.runspec import RunConfigError, RunSpec, StepSpec, resolve

REPO = Path(__file__).resolve().parents[1]
CODE = {"plugin": "code-repo", "options": {"path": str(REPO / "plugins" / "split")}}


def spec(pipeline: str | None, sink: str, source: dict | None = None, **sink_options) -> RunSpec:
    return RunSpec(
        source=StepSpec(**(source or CODE)),
        pipeline=StepSpec(plugin=pipeline) if pipeline else None,
        sinks=[StepSpec(plugin=sink, options=sink_options)],
    )


@pytest.fixture(scope="module")
def registry():
    return PluginHost().registry


def test_triplets_to_nemo_jsonl_are_refused_naming_the_sinks_that_take_them(registry):
    with pytest.raises(RunConfigError) as exc:
        resolve(spec("code-graph-pairs", "nemo-jsonl"), registry)
    message = str(exc.value)
    assert message.startswith("sink 'nemo-jsonl': ")
    assert "'triplets' rows" in message and "-k parquet" in message
    assert "sink.input=rows" in message  # the way to train on them anyway


@pytest.mark.parametrize(
    "told",
    [
        {"input": "rows", "prompt_field": "anchor", "response_field": "positive"},
        {"prompt_field": "anchor", "response_field": "positive"},  # input=auto reads them too
    ],
)
def test_columns_the_user_names_are_trusted(registry, told):
    """The user says which columns to read, so the run may start (the sink writes them)."""
    resolved = resolve(spec("code-graph-pairs", "nemo-jsonl", **told), registry)
    assert resolved.output_format() == "triplets"


class ThirdParty(Pipeline):
    """A pipeline of someone else's whose format name no built-in sink knows."""

    output_format = "sft"
    runner = "datadesigner"

    def build(self, options, run, seed):
        return None


def test_a_format_no_sink_knows_is_left_to_its_columns(registry):
    """A third party's `sft` rows may well hold `messages` or a `trace`: judged when they come,
    by their columns, as before (only formats known to hold no training text are refused)."""

    class Plugin:
        @hookimpl
        def register_pipelines(self, register):
            register("third-party-sft", ThirdParty())

    host = PluginHost()
    host.add(Plugin(), "third-party-sft-plugin")
    for sink in ("nemo-jsonl", "atif"):
        resolved = resolve(spec("third-party-sft", sink), host.registry)
        assert resolved.sinks[0].name == sink


@pytest.mark.parametrize("pipeline", ["code-graph-pairs", "coding-agent-dpo", "coding-agent-sft"])
def test_rows_without_traces_to_atif_are_refused(registry, pipeline):
    with pytest.raises(RunConfigError, match="sink 'atif': it writes Traces") as exc:
        resolve(
            spec(pipeline, "atif", {"plugin": "prompts", "options": {"path": str(REPO)}}), registry
        )
    assert "-k parquet" in str(exc.value)


@pytest.mark.parametrize(
    ("pipeline", "sink"),
    [
        (None, "atif"),  # a transcript source's traces
        (None, "nemo-jsonl"),
        ("code-graph-pairs", "parquet"),  # parquet and the Hub take any rows
        ("code-graph-pairs", "hf-hub"),
        ("coding-agent-dpo", "nemo-jsonl"),
        ("coding-agent-sft", "nemo-jsonl"),
    ],
)
def test_what_a_sink_can_write_is_not_refused(registry, pipeline, sink):
    source = None if pipeline else {"plugin": "claude-code", "options": {"path": str(REPO)}}
    if pipeline in ("coding-agent-dpo", "coding-agent-sft"):
        source = {"plugin": "prompts", "options": {"path": str(REPO)}}
    assert resolve(spec(pipeline, sink, source), registry).sinks[0].name == sink


def test_a_third_party_sink_refuses_nothing_unless_it_says(registry):
    class Anything(Sink[Options]):
        def write(self, dataset, options, run, output_format):
            return Written([], len(dataset))

    assert Anything().refuses(Options(), "triplets") is None


def test_the_cli_refuses_before_a_run_folder_exists(bashgym_cli, bashgym_env):
    out = bashgym_env.workdir / "refused"
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={CODE['options']['path']}",
        "-p", "code-graph-pairs", "-k", "nemo-jsonl", "-n", "5", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "sink 'nemo-jsonl'" in result.output and "'triplets' rows" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
