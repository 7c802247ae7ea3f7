"""DataDesigner model configs and providers built from a kernel `Model`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from bashgym_designer.models import (
    SERVED_TIMEOUT_S,
    MissingKeyError,
    model_config,
    model_provider,
    providers_for,
)

from bashgym.contracts import InputError
from bashgym.settings import ModelAlias, Settings


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
    model = FakeModel("default", params={"temperature": 0.3, "seed": 7, "timeout": 2.5})
    config = model_config(model, max_tokens=64, stop=["x"])
    params = config.inference_parameters
    assert (config.alias, config.provider, config.model) == ("default", "default", "m1")
    assert params.temperature == 0.3 and params.max_tokens == 64
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
