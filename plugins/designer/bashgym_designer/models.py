"""A run's models as DataDesigner wants them: a `ModelConfig` and a `ModelProvider` per alias.

The kernel resolves an alias to a `bashgym.contracts.Model` (its endpoint, model id, key env var
NAME, params, and whether a runtime serves it on this machine); DataDesigner drives its own
client from those fields. Each alias gets a provider of its own, named after the alias, so two
aliases on different endpoints never collide.

Keys are handled by env var NAME only: DataDesigner reads the variable itself. It would send an
unset name literally as the key (a baffling 401), so a missing variable is caught here first and
named (`MissingKeyError`, an InputError the CLI prints as one line).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import data_designer.config as dd

from bashgym.contracts import InputError, Model, Models
from bashgym_designer.constrain import SEPARATOR

# settings provider -> DataDesigner's `provider_type` (every other provider speaks OpenAI's API)
PROVIDER_TYPES = {"anthropic": "anthropic"}
# Inference params DataDesigner's ChatCompletionInferenceParams takes; any other alias param
# goes into the request body (`extra_body`).
DD_PARAMS = ("temperature", "top_p", "max_tokens", "max_parallel_requests", "timeout")
# call options that are never request-body params
CALL_ONLY = ("messages", "tools", "tool_choice", "stream", "num_retries", "max_retries")
# A model served on this machine (e.g. the embedded one on a CPU) can take minutes for one long
# answer; DataDesigner's 60 s default would throw that work away.
SERVED_TIMEOUT_S = 900


class MissingKeyError(InputError):
    """The env var that should hold an alias's API key is not set."""

    def __init__(self, alias: str, env_var: str) -> None:
        super().__init__(
            f"model alias {alias!r} needs an API key: set the environment variable {env_var}"
        )
        self.alias, self.env_var = alias, env_var


def require_key(model: Model) -> None:
    """Raise MissingKeyError unless the key env var (if the model needs one) is set."""
    if model.api_key_env and not os.environ.get(model.api_key_env):
        raise MissingKeyError(model.alias, model.api_key_env)


def provider_type(provider: str) -> str:
    """DataDesigner's `provider_type` for a settings provider (`openai` or `anthropic`)."""
    return PROVIDER_TYPES.get(provider, "openai")


def model_provider(model: Model, *, check_key: bool = True) -> dd.ModelProvider:
    """The DataDesigner provider for `model` (named after its alias); its key must be set,
    unless `check_key=False` (a config exported to run elsewhere, say)."""
    if check_key:
        require_key(model)
    return dd.ModelProvider(
        name=model.alias,
        endpoint=model.endpoint,
        provider_type=provider_type(model.provider),
        api_key=model.api_key_env,  # the NAME: DataDesigner reads the variable itself
    )


def model_config(model: Model, **params: Any) -> dd.ModelConfig:
    """A DataDesigner ModelConfig (alias and provider = the model's alias), `params` over the
    alias's. Params DataDesigner does not take by name go into the request body.

    A served model skips DataDesigner's "Hello!" health check: its runtime has already waited
    until it answers. Remote providers keep it, so a bad key or model id fails before a batch
    is spent.
    """
    merged = {**model.params, **params}
    known = {k: merged[k] for k in DD_PARAMS if merged.get(k) is not None}
    if "timeout" in known:  # DataDesigner takes whole seconds >= 1
        known["timeout"] = max(1, math.ceil(float(known["timeout"])))
    elif model.served:
        known["timeout"] = SERVED_TIMEOUT_S
    extra = extra_body(merged)
    return dd.ModelConfig(
        alias=model.alias,
        model=model.model,
        provider=model.alias,
        inference_parameters=dd.ChatCompletionInferenceParams(**known, extra_body=extra or None),
        skip_health_check=model.served,
    )


def extra_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """Params DataDesigner does not know by name (e.g. `seed`, `stop`): sent in the body."""
    extra = dict(params.get("extra_body") or {})
    skip = {*DD_PARAMS, *CALL_ONLY, "extra_body"}
    extra.update({k: v for k, v in params.items() if k not in skip})
    return extra


def providers_for(
    models: Models, model_configs: Iterable[dd.ModelConfig]
) -> list[dd.ModelProvider]:
    """The providers exactly those model configs use, one per provider name.

    A provider named after its config's alias (what `model_config` builds, constrained copies
    `<alias>--<column>` included) or listed in settings as an alias is resolved through
    `models`; any other provider name is left for DataDesigner to report.
    """
    providers: dict[str, dd.ModelProvider] = {}
    for config in model_configs:
        name = config.provider
        if not name or name in providers:
            continue
        own = config.alias == name or config.alias.startswith(f"{name}{SEPARATOR}")
        if own or name in models.settings.models:
            providers[name] = model_provider(models.resolve(name))
    return list(providers.values())
