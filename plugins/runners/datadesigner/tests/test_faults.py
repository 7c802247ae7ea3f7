"""Model faults, through the real clients against the scripted server: 429s forever stop in
bounded time with a one-line reason, malformed 200 bodies are retried like 5xx, and a model
that does not answer at start-up is one line and exit 2."""

from __future__ import annotations

import json
import socket

import pandas as pd
import pytest
from bashgym_testing.server import Fault, default_reply

PLUGIN = """
from pydantic import BaseModel
import data_designer.config as dd
from bashgym import hookimpl
from bashgym.contracts import Pipeline


class Answer(BaseModel):
    answer: str


class Echo(Pipeline):
    def build(self, options, run, seed):
        builder = dd.DataDesignerConfigBuilder(model_configs=[run.models.model_config("default")])
        builder.add_column(dd.LLMStructuredColumnConfig(
            name="s", prompt="Answer {{ item }}", model_alias="default", output_format=Answer))
        return builder


@hookimpl
def register_pipelines(register):
    register("echo", Echo())
"""


@pytest.fixture
def echo(bashgym_cli, scripted_models, tmp_path):
    plugin = tmp_path / "echo.py"
    plugin.write_text(PLUGIN)
    items = tmp_path / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(6)]}).to_csv(items, index=False)

    def run(*extra: str):
        out = tmp_path / "run"
        result = bashgym_cli(
            "run", "--plugin", str(plugin), "-s", "files", "--set", f"source.path={items}",
            "-p", "echo", "-k", "parquet", "--out", str(out), *extra,
        )  # fmt: skip
        summary = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return result, summary

    return run


def _preflight(request) -> bool:
    return request.last_user_text == "Reply with OK."


@pytest.mark.slow
def test_429_forever_stops_in_bounded_time_with_the_reason(echo, scripted_models, monkeypatch):
    monkeypatch.setenv("BASHGYM_DESIGNER__RATE_LIMIT_GIVE_UP_S", "3")
    server = scripted_models.server
    server.add_rule(lambda r: not _preflight(r), Fault.status(429))
    result, summary = echo()
    assert result.exit_code == 3, result.output
    assert summary["counts"]["dropped"] == {
        "pipeline column s: rate limited or out of quota (429)": 6
    }
    assert any("rate limited (429) for 3s" in note for note in summary["notes"])
    assert summary["usage_by_alias"]["default"]["failed_requests"] > 0


def test_malformed_200_bodies_are_retried_like_5xx(echo, scripted_models):
    calls = {"n": 0}

    def one_in_three(request):
        calls["n"] += 1
        return Fault.malformed() if calls["n"] % 3 == 0 else default_reply(request)

    scripted_models.server.add_rule(lambda r: not _preflight(r), one_in_three)
    result, summary = echo()
    assert result.exit_code == 0, result.output
    assert summary["counts"]["kept"] == 6 and summary["counts"]["dropped"] == {}
    assert calls["n"] > 6  # some answers came only on a retry


def test_a_model_that_does_not_answer_at_start_is_one_line(echo, scripted_models, bashgym_env):
    scripted_models.server.add_rule(_preflight, Fault.status(429))
    result, summary = echo()
    assert result.exit_code == 2
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert line.startswith("error: model alias 'default' does not answer: HTTP 429")
    assert "Traceback" not in result.output and summary["status"] == "failed"

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    toml = bashgym_env.workdir / "bashgym.toml"
    toml.write_text(toml.read_text().replace(scripted_models.server.openai_base_url,
                                             f"http://127.0.0.1:{port}/v1"))  # fmt: skip
    result, _ = echo("--fresh")
    assert result.exit_code == 2
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert "does not answer: connection refused at http://127.0.0.1" in line
