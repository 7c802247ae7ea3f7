"""What a DataDesigner run pays before its first row: no litellm (the preflight asks through
DataDesigner's own client), and one TLS context for all of DataDesigner's connection pools.
Real parts: the `bashgym` command as a subprocess against the scripted server, and httpx's
real transports."""

from __future__ import annotations

import json

import httpx
import pytest
from bashgym_designer import transport

PLUGIN = """
import json, sys
from pathlib import Path
import data_designer.config as dd
from bashgym import hookimpl
from bashgym.contracts import Pipeline
from bashgym_designer.models import model_config


class Ask(Pipeline):
    runner = "datadesigner"

    def build(self, options, run, seed):
        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))])
        builder.add_column(dd.SamplerColumnConfig(
            name="topic", sampler_type="category",
            params=dd.CategorySamplerParams(values=["git", "regexes"])))
        builder.add_column(dd.LLMTextColumnConfig(
            name="answer", prompt="Explain {{ topic }}", model_alias="default"))
        return builder


@hookimpl
def register_pipelines(register):
    register("ask", Ask())


@hookimpl
def on_run_end(summary, run):
    loaded = sorted(m for m in ("litellm", "openai") if m in sys.modules)
    (run.run_dir / "modules.json").write_text(json.dumps(loaded))
"""


@pytest.mark.slow  # a real `bashgym` process that first indexes every plugin: ~15-40 s here
def test_a_pipeline_run_never_imports_litellm(bashgym_cli, scripted_models, tmp_path):
    """litellm's import was 3-5 s of every run's start-up; nothing in a DataDesigner run
    needs it. The preflight still asks once, and its tokens are charged."""
    plugin = tmp_path / "ask.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "run"
    result = bashgym_cli.subprocess(
        "run", "--plugin", plugin, "-p", "ask", "-k", "parquet", "-n", "2", "--out", out
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "modules.json").read_text()) == []
    posts = scripted_models.server.completions
    assert sum(r.last_user_text == "Reply with OK." for r in posts) == 1
    usage = json.loads((out / "run.json").read_text())["usage_by_alias"]["default"]
    assert usage["requests"] == len(posts) == 3  # the preflight's and the two rows'
    assert usage["input_tokens"] > 0


def test_datadesigners_shards_share_one_tls_context():
    from data_designer.engine.models.clients.adapters.httpx_sharding import (
        ShardedAsyncHTTPTransport,
    )

    transport.install()
    transport.install()  # idempotent: one wrapper, not two
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    sharded = ShardedAsyncHTTPTransport(limits=limits, shard_count=4)
    contexts = {id(shard._pool._ssl_context) for shard in sharded._transports}
    assert contexts == {id(transport.shared_context())}
    # the shards keep their own connection limits
    assert [s._pool._max_connections for s in sharded._transports] == [2, 2, 2, 2]

    # a factory DataDesigner (or a test) passes is left as it is
    mine = ShardedAsyncHTTPTransport(
        limits=limits, shard_count=2, transport_factory=lambda lim: httpx.AsyncHTTPTransport()
    )
    assert {id(s._pool._ssl_context) for s in mine._transports} != contexts
