"""`bashgym models` (list the aliases) and `bashgym models check` (one request each)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from bashgym_cli import fail, out
from rich.markup import escape
from rich.table import Table

from bashgym.plugins import current_host
from bashgym.settings import SettingsError, load_settings


def models_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List model aliases: provider, model, endpoint, and the env var holding the key."""
    if ctx.invoked_subcommand is not None:
        return
    import os

    from bashgym_models_providers.session import PROVIDERS, key_env, static_endpoint

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    rows = []
    for name, alias in settings.models.items():
        env = key_env(alias)
        runtime = PROVIDERS[alias.provider].runtime
        rows.append(
            {
                "alias": name,
                "provider": alias.provider,
                "model": alias.model or (f"({runtime} default)" if runtime else None),
                "endpoint": static_endpoint(alias) or f"started by runtime {runtime!r}",
                "api_key_env": env,
                "api_key_set": bool(os.environ.get(env)) if env else None,
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("alias", "provider")
    for column in ("model", "endpoint", "key env var"):
        table.add_column(column, overflow="fold")  # never cut a URL or a variable name short
    table.add_column("key set")
    for row in rows:
        is_set = {None: "-", True: "yes", False: "[red]NO[/]"}[row["api_key_set"]]
        table.add_row(
            row["alias"],
            row["provider"],
            row["model"] or "-",
            row["endpoint"],
            row["api_key_env"] or "-",
            is_set,
        )
    out.print(table)


def models_check(
    alias: Annotated[
        str | None, typer.Argument(help="Alias to check; default: every configured alias.")
    ] = None,
) -> None:
    """Send one tiny request per alias; print latency or why it failed (exit 1 on failure)."""

    from bashgym_models_providers.session import ModelSession, check

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    if alias is not None and alias not in settings.models:
        known = ", ".join(settings.models) or "none"
        raise fail(f"unknown model alias {alias!r}; configured aliases: {known}")
    names = [alias] if alias else list(settings.models)
    failed = False
    with ModelSession(settings, current_host().registry) as session:
        for name in names:
            result = check(session, name)
            if result.ok:
                out.print(f"[green]ok[/]    {name}: {result.latency_s:.2f}s", highlight=False)
            else:
                failed = True
                message = escape(result.error or "")
                out.print(f"[red]FAIL[/]  {name}: {message}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="List model aliases; check them.", invoke_without_command=True)
    models.callback()(models_list)
    models.command("check")(models_check)
    app.add_typer(models, name="models")
