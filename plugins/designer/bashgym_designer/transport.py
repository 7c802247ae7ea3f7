"""One TLS context for every HTTP connection pool DataDesigner opens in this process.

DataDesigner 0.9 spreads each model client's requests over up to 16 httpx transports
(`ShardedAsyncHTTPTransport`), and httpx builds a fresh `ssl.SSLContext` for each, loading the
whole CA bundle every time: 50-100 ms of CPU apiece, 16 per model client, spent on the event
loop as the first request goes out (measured here: 1.3-1.8 s of a 640-row run's CPU, as much
as its start-up costs BashGym). One context, made as httpx makes its default
(`httpx.create_ssl_context()`: certifi's bundle, or `SSL_CERT_FILE` / `SSL_CERT_DIR`) and
shared, verifies exactly as before: an SSLContext is meant to serve many connections.

Installed once per process, as `faults` is, by wrapping the constructor: DataDesigner offers
the transport factory as a parameter but never passes one.
"""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
_installed = False
_contexts: dict[tuple[str | None, str | None], Any] = {}


def shared_context() -> Any:
    """httpx's default TLS context, made once per CA setting (the env vars httpx reads)."""
    import httpx

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _lock:
        if key not in _contexts:
            _contexts[key] = httpx.create_ssl_context()
        return _contexts[key]


def transport(limits: Any) -> Any:
    """One shard's transport: httpx's default, on the shared TLS context."""
    import httpx

    return httpx.AsyncHTTPTransport(limits=limits, verify=shared_context())


def install() -> None:
    """Make DataDesigner's sharded transports use `transport` (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        # DataDesigner's engine: imported after prepare_environment (bashgym_designer.designer)
        from data_designer.engine.models.clients.adapters import httpx_sharding

        sharded = httpx_sharding.ShardedAsyncHTTPTransport
        original = sharded.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("transport_factory") is None:
                kwargs["transport_factory"] = transport
            original(self, *args, **kwargs)

        sharded.__init__ = init
        _installed = True
