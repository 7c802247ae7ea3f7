"""The HTTP API and dashboard: runs and orchestration jobs over HTTP and WebSocket, live, in a
browser (`bashgym api serve`).

A job is a run directory under the jobs root, carried out by a `bashgym run` (or `bashgym
orchestrate ...`) child process; the server reads each job's state from its directory
(run.json, events.jsonl, the run's lock), so a job that crashes never takes the server down and
a restarted server finds every job again. `create_app(ServerConfig(...))` builds the FastAPI
app for embedding or tests; the `[api]` settings table is `ApiSettings`.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_api.settings import ApiSettings

__all__ = ["ApiSettings", "ServerConfig", "create_app"]


def __getattr__(name: str) -> Any:
    # FastAPI and the app load only when asked for: this module loads whenever the CLI lists
    # its commands or a run reads the settings tables
    if name in ("ServerConfig", "create_app"):
        from bashgym_api import app

        return getattr(app, name)
    raise AttributeError(name)


@hookimpl
def register_settings(register: Any) -> None:
    register("api", ApiSettings)


@hookimpl
def register_commands(app: Any) -> None:
    from bashgym_api.cli import api

    app.add_typer(api, name="api")
