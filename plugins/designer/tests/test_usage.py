"""Every request is counted, per alias and per model: answers that failed to parse, retries and
judge calls included, and two aliases on one model id apart (run.json, from the events)."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
from bashgym_testing.server import Reply, default_reply

PLUGIN = '''
from pydantic import BaseModel
import data_designer.config as dd
from bashgym import hookimpl
from bashgym_designer.models import model_config
from bashgym.contracts import Pipeline


class Answer(BaseModel):
    answer: str


class TwoAliases(Pipeline):
    """A structured column on `default` and a text column on `judge`."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve(a)) for a in ("default", "judge")]
        )
        builder.add_column(dd.LLMStructuredColumnConfig(
            name="s", prompt="Answer {{ item }}", model_alias="default", output_format=Answer))
        builder.add_column(dd.LLMTextColumnConfig(
            name="t", prompt="Say {{ item }}", model_alias="judge"))
        return builder


@hookimpl
def register_pipelines(register):
    register("two", TwoAliases())
'''

TOKENS_IN, TOKENS_OUT = 11, 5


def test_usage_counts_every_request_per_alias_even_on_one_model(
    bashgym_cli, bashgym_env, model_server, monkeypatch, tmp_path
):
    monkeypatch.setenv("SCRIPTED_KEY", "k")
    toml = ""
    for alias in ("default", "judge"):
        toml += (
            f'[models.{alias}]\nprovider = "openai-compatible"\nmodel = "same-model"\n'
            f'endpoint = "{model_server.openai_base_url}"\napi_key_env = "SCRIPTED_KEY"\n'
        )
    (bashgym_env.workdir / "bashgym.toml").write_text(toml)
    plugin = tmp_path / "two.py"
    plugin.write_text(PLUGIN)
    items = tmp_path / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(4)]}).to_csv(items, index=False)

    def fixed_usage(request):
        reply = default_reply(request)
        if "Answer item 3" in request.last_user_text:
            reply = Reply("no json here")  # never parses: retried, then dropped
        return dataclasses.replace(
            reply, usage={"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT}
        )

    model_server.add_rule(lambda request: True, fixed_usage)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "--plugin", str(plugin), "-s", "files", "--set", f"source.path={items}",
        "-p", "two", "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    answered = [r for r in model_server.requests if r.path.endswith("/chat/completions")]
    by_alias = summary["usage_by_alias"]
    assert set(by_alias) == {"default", "judge"}
    # the unparseable answers were requested (and paid for) more than once, and every one counts
    assert by_alias["default"]["requests"] > 4
    total = sum(entry["requests"] for entry in by_alias.values())
    assert total == len(answered)
    assert summary["usage"]["input_tokens"] == TOKENS_IN * len(answered)
    assert summary["usage"]["output_tokens"] == TOKENS_OUT * len(answered)
    assert summary["usage_by_model"]["same-model"]["requests"] == len(answered)
    assert summary["counts"]["dropped"] == {
        "pipeline column s: unparseable answer (no JSON found)": 1
    }
