"""DataDesigner model configs and providers built from a kernel `Model`, and DataDesigner
through every provider type end to end: `bashgym run` against the scripted server, through
DataDesigner's real HTTP adapters with each endpoint overridden to 127.0.0.1, so the request
path, the credential header and the model id it sends are checked, not assumed. The embedded
path uses a fake Runtime that "serves" the scripted server and records start/stop.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bashgym_designer.models import (
    SERVED_TIMEOUT_S,
    MissingKeyError,
    model_config,
    model_provider,
    providers_for,
)
from bashgym_testing import RecordingRuntime
from bashgym_testing.server import Reply

from bashgym import hookimpl
from bashgym.contracts import InputError, Pipeline
from bashgym.settings import ModelAlias, Settings

SECRET = "sk-scripted-secret-value"


@dataclass(frozen=True)
class FakeModel:
    alias: str
    provider: str = "openai-compatible"
    model: str = "m1"
    endpoint: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    served: bool = False

    async def acomplete(self, messages, **call):  # pragma: no cover - not called here
        raise NotImplementedError

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        return 0.0


class FakeModels:
    def __init__(self, settings: Settings, **models: FakeModel) -> None:
        self.settings = settings
        self.models = models
        self.resolved: list[str] = []

    def resolve(self, alias: str) -> FakeModel:
        self.resolved.append(alias)
        return self.models.get(alias) or FakeModel(alias)


def test_model_config_splits_params_into_known_and_request_body() -> None:
    given = {"temperature": 0.3, "seed": 7, "timeout": 2.5, "max_parallel_requests": 8}
    config = model_config(FakeModel("default", params=given), max_tokens=64, stop=["x"])
    params = config.inference_parameters
    assert (config.alias, config.provider, config.model) == ("default", "default", "m1")
    assert params.temperature == 0.3 and params.max_tokens == 64
    assert params.max_parallel_requests == 8
    assert params.timeout == 3  # whole seconds, rounded up
    assert params.extra_body == {"seed": 7, "stop": ["x"]}
    assert config.skip_health_check is False


def test_served_model_gets_a_long_timeout_and_skips_the_health_check() -> None:
    config = model_config(FakeModel("default", provider="embedded", served=True))
    assert config.inference_parameters.timeout == SERVED_TIMEOUT_S
    assert config.inference_parameters.extra_body is None
    assert config.skip_health_check is True
    explicit = model_config(FakeModel("default", served=True), timeout=5)
    assert explicit.inference_parameters.timeout == 5


def test_provider_types_and_key_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    anthropic = model_provider(FakeModel("a", provider="anthropic", api_key_env="MY_KEY"))
    assert (anthropic.name, anthropic.provider_type, anthropic.api_key) == (
        "a",
        "anthropic",
        "MY_KEY",
    )
    assert model_provider(FakeModel("n", provider="nvidia")).provider_type == "openai"
    assert model_provider(FakeModel("local")).api_key is None  # keyless: no name to read


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
        ("nvidia", "openai"),
        ("openrouter", "openai"),
        ("openai-compatible", "openai"),
        ("embedded", "openai"),
    ],
)
def test_every_settings_provider_has_a_provider_type(provider: str, expected: str) -> None:
    assert model_provider(FakeModel("m", provider=provider)).provider_type == expected


def test_missing_key_is_an_input_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="NOT_SET_KEY") as caught:
        model_provider(FakeModel("judge", api_key_env="NOT_SET_KEY"))
    assert isinstance(caught.value, InputError)
    assert (caught.value.alias, caught.value.env_var) == ("judge", "NOT_SET_KEY")


def test_providers_for_resolves_own_and_settings_aliases_once() -> None:
    import data_designer.config as dd

    settings = Settings(models={"judge": ModelAlias(provider="openai-compatible")})
    models = FakeModels(settings, default=FakeModel("default", endpoint="http://a/v1"))
    configs = [
        model_config(models.models["default"]),
        model_config(models.models["default"]).model_copy(update={"alias": "default--col"}),
        dd.ModelConfig(alias="j2", model="x", provider="judge"),
        dd.ModelConfig(alias="other", model="x", provider="somewhere-else"),
    ]
    providers = providers_for(models, configs)
    assert [p.name for p in providers] == ["default", "judge"]
    assert providers[0].endpoint == "http://a/v1"
    assert models.resolved == ["default", "judge"]


# ---------------------------------------------------------------------------------------------
# DataDesigner, end to end through `bashgym run`

REMOTE = ["openai-compatible", "openai", "nvidia", "openrouter", "anthropic"]
KEY_VARS = {
    "openai": "OPENAI_API_KEY",
    "nvidia": "NVIDIA_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


def key_var(provider: str) -> str:
    return KEY_VARS.get(provider, "LOCAL_LLM_KEY")


def write_models(workdir: Path, models: dict[str, dict[str, Any]]) -> None:
    """A project bashgym.toml holding `models`."""
    lines = []
    for name, alias in models.items():
        lines.append(f"[models.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in alias.items()]
    (workdir / "bashgym.toml").write_text("\n".join(lines) + "\n")


def remote_alias(provider: str, server: Any) -> dict[str, Any]:
    """An alias of `provider` pointed at the scripted server, key in the provider's default var."""
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    alias = {"provider": provider, "model": f"{provider}-model", "endpoint": base}
    if provider == "openai-compatible":
        alias["api_key_env"] = "LOCAL_LLM_KEY"
    return alias


class LLMPipeline(Pipeline):
    """One sampler and one LLM text column on the alias `default`, via `run.models`."""

    runner = "datadesigner"

    fail_after_models = False

    def build(self, options: Any, run: Any, seed: Any) -> Any:
        import data_designer.config as dd

        config = model_config(run.models.resolve("default"))
        if self.fail_after_models:
            raise RuntimeError("pipeline broke after starting the model")
        return (
            dd.DataDesignerConfigBuilder(model_configs=[config])
            .add_column(
                dd.SamplerColumnConfig(
                    name="topic",
                    sampler_type="category",
                    params=dd.CategorySamplerParams(values=["git", "sed"]),
                )
            )
            .add_column(
                dd.LLMTextColumnConfig(
                    name="answer", prompt="Explain {{ topic }} briefly.", model_alias="default"
                )
            )
        )


class LLMPlugin:
    def __init__(self, pipeline: LLMPipeline, runtime: RecordingRuntime | None = None) -> None:
        self.pipeline, self.runtime = pipeline, runtime

    @hookimpl
    def register_pipelines(self, register: Any) -> None:
        register("llm", self.pipeline)

    @hookimpl
    def register_runtimes(self, register: Any) -> None:
        if self.runtime is not None:
            register("embedded", self.runtime)


@pytest.fixture
def llm_run(bashgym_cli, bashgym_env, bashgym_host, register_plugin, model_server):
    """`llm_run(runtime=None, fail=False)` → (CliResult, run dir) of `bashgym run -p llm`."""
    # Whoever else registers the `embedded` runtime (the real plugin) steps aside for the fake.
    existing = bashgym_host.registry.items["runtimes"].get("embedded")
    if existing is not None:
        bashgym_host.remove(existing.plugin)

    def run(runtime: RecordingRuntime | None = None, fail: bool = False, n: int = 3):
        pipeline = LLMPipeline()
        pipeline.fail_after_models = fail
        register_plugin(LLMPlugin(pipeline, runtime), "llm-plugin")
        out = bashgym_env.workdir / "run"
        result = bashgym_cli("run", "-p", "llm", "-k", "parquet", "-n", str(n), "--out", out)
        return result, out

    return run


@pytest.mark.parametrize("provider", REMOTE)
def test_bashgym_run_through_each_provider(
    monkeypatch, bashgym_env, model_server, llm_run, provider
):
    monkeypatch.setenv(key_var(provider), SECRET)
    model_server.add_rule("Explain", lambda req: Reply(f"{req.api} says {req.last_user_text}"))
    write_models(bashgym_env.workdir, {"default": remote_alias(provider, model_server)})

    result, out = llm_run()

    assert result.exit_code == 0, result.output
    rows = pq.read_table(out / "data.parquet").to_pylist()
    api = "anthropic" if provider == "anthropic" else "openai"
    assert len(rows) == 3
    assert all(r["answer"] == f"{api} says Explain {r['topic']} briefly." for r in rows)
    posts = model_server.completions
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    assert {(r.path, r.model, r.api_key) for r in posts} == {(path, f"{provider}-model", SECRET)}
    # A remote alias gets one counted preflight request before any row (not DataDesigner's
    # uncounted health check).
    assert sum(r.last_user_text == "Reply with OK." for r in posts) == 1
    assert not any("Hello!" in r.last_user_text for r in posts)
    assert SECRET not in (out / "run.toml").read_text() + (out / "run.json").read_text()


def test_embedded_alias_is_started_for_the_run_and_stopped_after(
    bashgym_env, model_server, llm_run
):
    runtime = RecordingRuntime(model_server.openai_base_url)
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})

    result, out = llm_run(runtime)

    assert result.exit_code == 0, result.output
    assert runtime.events == ["start", "stop"]
    assert len(pq.read_table(out / "data.parquet")) == 3
    posts = model_server.completions
    assert posts and {r.model for r in posts} == {"fake"}
    # serve() already waited until the server answered: no health check for a served model.
    assert not any("Hello!" in r.last_user_text for r in posts)


def test_embedded_alias_is_stopped_when_the_run_fails(bashgym_env, model_server, llm_run):
    runtime = RecordingRuntime(model_server.openai_base_url)
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})

    result, out = llm_run(runtime, fail=True)

    # A pipeline that raises while building is one line naming it (exit 2), not a traceback,
    # and the model server it had started is stopped all the same.
    assert result.exit_code == 2
    assert (
        "pipeline 'llm' failed to build its config: RuntimeError: pipeline broke" in result.output
    )
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    assert runtime.events == ["start", "stop"]


def test_embedded_alias_without_a_runtime_is_a_clear_error(bashgym_env, bashgym_host, llm_run):
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})
    result, _ = llm_run()
    assert result.exit_code == 2
    assert "no runtime named 'embedded' is installed" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------------------------
# Offline: no connection leaves the machine


@pytest.fixture
def outbound(monkeypatch) -> list[Any]:
    """Every connection attempt (and name lookup) to a non-loopback address, refused."""
    attempts: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def local(address: Any) -> bool:
        return not isinstance(address, tuple) or address[0] in ("127.0.0.1", "::1", "localhost")

    def connect(self: socket.socket, address: Any) -> Any:
        if not local(address):
            attempts.append(address)
            raise OSError("outbound connection blocked by the test")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not local(address):
            attempts.append(address)
            return 111
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in (None, "127.0.0.1", "::1", "localhost"):
            attempts.append(host)
            raise socket.gaierror("name lookup blocked by the test")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture
def cold_tokenizer(monkeypatch) -> None:
    """Forget any cl100k_base already loaded in this process (litellm loads it on import)."""
    import tiktoken.registry
    from data_designer.engine.utils import token_counting

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(token_counting, "get_cl100k_base_tokenizer", _fresh_getter())
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)


def _fresh_getter() -> Any:
    from functools import lru_cache

    import data_designer.lazy_heavy_imports as lazy

    @lru_cache(maxsize=1)
    def get_cl100k_base_tokenizer() -> Any:
        return lazy.tiktoken.get_encoding("cl100k_base")

    return get_cl100k_base_tokenizer


def test_pipeline_run_makes_no_outbound_connection(
    monkeypatch, bashgym_env, model_server, llm_run, outbound, cold_tokenizer
):
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    write_models(bashgym_env.workdir, {"default": remote_alias("openai-compatible", model_server)})

    result, out = llm_run()

    assert result.exit_code == 0, result.output
    assert outbound == []
    log = (out / "logs" / "datadesigner.log").read_text()
    assert "failed to calculate" not in log  # the profiler counted tokens, offline
    from data_designer.engine.utils.token_counting import count_text_tokens

    assert count_text_tokens("hello world") == 2  # the real cl100k_base, not an estimate


def test_without_a_bundled_tokenizer_counts_are_estimated_not_downloaded(
    monkeypatch, bashgym_env, outbound, cold_tokenizer
):
    import bashgym_designer.designer as designer
    from data_designer.engine.utils import token_counting

    monkeypatch.setattr(designer, "_bundled_tiktoken_dir", lambda: None)
    designer.prepare_environment(Settings())
    assert token_counting.count_text_tokens("x" * 10) == 3
    assert outbound == []
