"""The model session a run gets, for tests that build their own RunContext."""

from __future__ import annotations

from bashgym.contracts import Models, open_models
from bashgym.plugins import PluginHost, current_host
from bashgym.registry import Registry
from bashgym.settings import Settings


def models_for(
    settings: Settings,
    host: PluginHost | None = None,
    *,
    registry: Registry | None = None,
    serve: bool = True,
) -> Models:
    """The installed plugins' model session for `settings` (the `open_models` hook of `host`,
    default the current one, as the engine asks for it); runtimes come from `registry`, default
    the host's. Close it, or use it as `with models_for(...) as models:`."""
    host = host or current_host()
    return open_models(settings, registry or host.registry, host.hook, serve=serve)
