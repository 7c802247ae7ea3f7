"""BashGym model access (a default plugin): aliases → providers, keys by env var name, local
runtimes started on demand, litellm calls, prices, and the `bashgym models` commands.

The kernel asks for a run's model session through the `open_models` hook; this plugin answers:
`ModelSession` is the kernel's `Models`, and each `ResolvedModel` it resolves is the kernel's
`Model` (`acomplete` with bounded retries and one `Health` per session, `cost`). Plugins call
models through `run.model(alias)` / `task.model(alias)`, never through this module. Its own
API (for itself, its commands and its tests): `ModelSession`, `ResolvedModel`, `ModelError`,
`MissingKeyError`, `PROVIDERS`, `NOT_SERVED_ENDPOINT`, `check`, `cost_usd`, `describe_failure`,
`load_litellm`, and for calls with bounded retries (every try counted) `acomplete`,
`RetryPolicy`, `Health`, `ModelCallError`, `is_transient`.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_models_providers.calls import Health, ModelCallError, RetryPolicy, acomplete
from bashgym_models_providers.failures import is_transient
from bashgym_models_providers.session import (
    NOT_SERVED_ENDPOINT,
    PROVIDERS,
    CheckResult,
    MissingKeyError,
    ModelError,
    ModelSession,
    ResolvedModel,
    check,
    cost_usd,
    describe_failure,
    load_litellm,
    resolve_static,
)

__all__ = [
    "NOT_SERVED_ENDPOINT",
    "PROVIDERS",
    "CheckResult",
    "Health",
    "MissingKeyError",
    "ModelCallError",
    "ModelError",
    "ModelSession",
    "ResolvedModel",
    "RetryPolicy",
    "acomplete",
    "check",
    "cost_usd",
    "describe_failure",
    "is_transient",
    "load_litellm",
    "resolve_static",
]


@hookimpl
def open_models(settings, registry, serve):
    return ModelSession(settings, registry, serve=serve)


@hookimpl
def register_commands(app):
    from bashgym_models_providers.commands import register

    register(app)
