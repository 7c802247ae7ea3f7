"""BashGym model access (a default plugin): aliases → providers, keys by env var name, local
runtimes started on demand, litellm calls, prices, and the `bashgym models` commands.

The kernel asks for a run's model session through the `open_models` hook; this plugin answers.
Its declared API, for plugins that call models directly: `ModelSession`, `ResolvedModel`,
`ModelError`, `MissingKeyError`, `PROVIDERS`, `NOT_SERVED_ENDPOINT`, `check`, `cost_usd`,
`describe_failure`, `load_litellm`.
"""

from __future__ import annotations

from bashgym import hookimpl
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
    "MissingKeyError",
    "ModelError",
    "ModelSession",
    "ResolvedModel",
    "check",
    "cost_usd",
    "describe_failure",
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
