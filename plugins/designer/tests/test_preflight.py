"""The preflight checks exactly the aliases a config's columns call, never the others the
builder defines (DataDesigner's built-in nvidia-*/openai-*/openrouter-* aliases, a judge alias
no column uses). A samplers-only run sends no request and is charged nothing, so it succeeds
with the model endpoint down. Real parts: DataDesigner's builder and column configs, the
scripted server, the `bashgym` CLI."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import data_designer.config as dd
import pytest
from bashgym_designer.constrain import constrain
from bashgym_designer.models import model_config
from bashgym_designer.preflight import called_aliases, preflight
from data_designer.config.default_model_settings import get_builtin_model_configs

CHECK_TEXT = "Reply with OK."


def _dead_endpoint() -> str:
    """An endpoint on a port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _samplers_run_file(tmp_path: Path) -> Path:
    """examples/slice.toml with an absolute seed path: files -> samplers -> parquet."""
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("task,language\nsort a list,python\nparse a date,go\n")
    run_file = tmp_path / "slice.toml"
    run_file.write_text(
        "num_records = 4\n"
        f'[source]\nplugin = "files"\npath = "{tasks}"\n'
        '[pipeline]\nplugin = "samplers"\n'
        'categories = { difficulty = ["easy", "hard"] }\n'
        '[[sinks]]\nplugin = "parquet"\n'
    )
    return run_file


def _usage_by_alias(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())["usage_by_alias"]


@pytest.fixture
def dd_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `prepare_environment` sets before DataDesigner's engine is imported, kept to
    this test (offline, no telemetry, its home under tmp)."""
    monkeypatch.setenv("DATA_DESIGNER_HOME", str(tmp_path / "dd-home"))
    monkeypatch.setenv("NEMO_TELEMETRY_ENABLED", "false")


def test_a_samplers_run_sends_no_check_and_is_charged_nothing(
    bashgym_cli, scripted_models, tmp_path
):
    """Before: 12 "Reply with OK." requests, one per DataDesigner built-in alias, all charged."""
    out = tmp_path / "run"
    result = bashgym_cli("run", str(_samplers_run_file(tmp_path)), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert scripted_models.server.completions == []
    assert _usage_by_alias(out) == {}


def test_a_samplers_run_succeeds_with_the_model_endpoint_down(
    bashgym_cli, scripted_models, tmp_path, monkeypatch
):
    """Before: exit 2, "model alias 'nvidia-embedding' does not answer", an alias never set."""
    monkeypatch.setenv("BASHGYM_MODELS__DEFAULT__ENDPOINT", _dead_endpoint())
    out = tmp_path / "run"
    result = bashgym_cli("run", str(_samplers_run_file(tmp_path)), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "does not answer" not in result.output
    assert json.loads((out / "run.json").read_text())["status"] == "ok"
    assert _usage_by_alias(out) == {}


def _builder_with_every_alias(ctx: Any) -> dd.DataDesignerConfigBuilder:
    """DataDesigner's built-in aliases (what a builder made without model configs gets, once
    DataDesigner has written its home's defaults) plus `default` and `judge`, with one
    structured column on `default` (constrained: `default--answer`)."""
    ours = [model_config(ctx.models.resolve(alias)) for alias in ("default", "judge")]
    builder = dd.DataDesignerConfigBuilder(model_configs=[*get_builtin_model_configs(), *ours])
    builder.add_column(
        dd.SamplerColumnConfig(
            name="topic",
            sampler_type="category",
            params=dd.CategorySamplerParams(values=["git", "regexes"]),
        )
    )
    builder.add_column(
        dd.LLMStructuredColumnConfig(
            name="answer",
            prompt="Explain {{ topic }}",
            model_alias="default",
            output_format={"type": "object", "properties": {"text": {"type": "string"}}},
        )
    )
    return builder


def test_an_llm_config_checks_only_the_alias_its_column_calls(scripted_models, dd_env):
    """Before: 14 checks (12 built-in aliases, `default` and the unused `judge`)."""
    ctx = scripted_models.run_context()
    with ctx.models:
        builder = _builder_with_every_alias(ctx)
        assert {"nvidia-text", "openai-embedding"} <= {c.alias for c in builder.model_configs}
        assert constrain(builder, ctx.models) == ["answer"]  # the column calls default--answer
        preflight(builder, ctx)
    posts = scripted_models.server.completions
    assert [(r.model, r.last_user_text) for r in posts] == [("scripted-default", CHECK_TEXT)]
    assert set(ctx.tally.by_alias) == {"default"}
    assert ctx.tally.by_alias["default"]["requests"] == 1


def test_called_aliases_reads_every_kind_of_model_column() -> None:
    """LLM, judge and embedding columns name their alias in `model_alias`; a config with no
    model column calls none."""
    builder = dd.DataDesignerConfigBuilder()
    builder.add_column(
        dd.SamplerColumnConfig(
            name="topic", sampler_type="category", params=dd.CategorySamplerParams(values=["a"])
        )
    )
    builder.add_column(dd.ExpressionColumnConfig(name="prompt", expr="Say {{ topic }}"))
    assert called_aliases(builder) == []
    builder.add_column(dd.LLMTextColumnConfig(name="a", prompt="{{ prompt }}", model_alias="gen"))
    builder.add_column(
        dd.LLMJudgeColumnConfig(
            name="grade",
            prompt="Grade {{ a }}",
            model_alias="judge",
            scores=[dd.Score(name="ok", description="is it ok", options={1: "yes", 0: "no"})],
        )
    )
    builder.add_column(dd.EmbeddingColumnConfig(name="vec", target_column="a", model_alias="emb"))
    assert called_aliases(builder) == ["emb", "gen", "judge"]
