"""`bashgym api serve`: the API and the dashboard in one uvicorn process."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Annotated

import typer
from bashgym_cli import err, fail, out

from bashgym.settings import SettingsError, load_settings
from bashgym_api.auth import needs_token
from bashgym_api.settings import ApiSettings

JOBS_DIR_HELP = "Where job (run) directories go (default: \\[api] jobs_dir, else RUNS_DIR/api)."
api = typer.Typer(
    name="api",
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="The HTTP API and dashboard: start runs and orchestration jobs, watch them live.",
)


@api.command("serve")
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; anything but 127.0.0.1 needs a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port.")] = 8000,
    jobs_dir: Annotated[Path | None, typer.Option("--jobs-dir", help=JOBS_DIR_HELP)] = None,
) -> None:
    """Serve the API (JSON, OpenAPI docs at /docs), the events WebSocket and the dashboard.

    Jobs run as child processes (`bashgym run`, `bashgym orchestrate ...`) in their own run
    directories under the jobs dir; a restarted server finds every one again. Binding any
    address but loopback requires a token: the one in the env var named by \\[api] token_env,
    else a new one, printed here. Clients send `Authorization: Bearer TOKEN`; a browser opens
    the printed URL once (it sets a cookie).

    [bold]Examples[/]

      bashgym api serve

      bashgym api serve --host 0.0.0.0 --port 8080

      BASHGYM_API__TOKEN_ENV=MY_TOKEN bashgym api serve --host 0.0.0.0
    """
    import uvicorn  # ~0.2 s: only when serving

    from bashgym_api.app import ServerConfig, create_app

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    table = settings.table(ApiSettings)
    root = jobs_dir or table.jobs_dir or settings.runs_dir / "api"
    token = None
    if needs_token(host, table.require_token):
        if table.token_env:
            token = os.environ.get(table.token_env)
            if not token:
                raise fail(f"[api] token_env names {table.token_env}, which is not set")
        else:
            token = secrets.token_urlsafe(24)
            err.print(f"API token (send it as 'Authorization: Bearer TOKEN'): {token}",
                      highlight=False, markup=False, soft_wrap=True)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != table.token_env}  # children never see it
    config = ServerConfig(
        jobs_root=root, token=token, cors_origins=table.cors_origins,
        allow_plugin_files=table.allow_plugin_files, cancel_grace_s=table.cancel_grace_s,
        child_env=env, push_token_envs=table.push_token_envs,
    )  # fmt: skip
    app = create_app(config)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    query = f"/?token={token}" if token else "/"
    out.print(f"BashGym API on http://{shown}:{port}{query} (docs: /docs); jobs in {root}",
              highlight=False, markup=False, soft_wrap=True)  # fmt: skip
    uvicorn.run(app, host=host, port=port, log_level="warning", ws="websockets-sansio")
