"""`bashgym models` (list the aliases) and `bashgym models check` (one request each)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out
from rich.markup import escape

from bashgym.plugins import current_host
from bashgym.settings import ModelAlias, SettingsError, load_settings


def models_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List model aliases: provider, model, endpoint, and the env var holding the key."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    rows = [_alias_row(name, alias) for name, alias in settings.models.items()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from bashgym_commands_inspect import Field, print_listing
    from bashgym_commands_inspect.listing import fits

    # every cell but `key set` is typed or copied (an alias, a provider, a model id, a URL, a
    # variable name): a table only when they all fit whole, else a block per alias headed by
    # them on one line (as `bashgym options` does); never `openai-compat…`, never a URL folded
    names = ("alias", "provider", "model", "endpoint", "key env var")
    fields = [*(Field(header, name=True) for header in names), Field("key set")]
    cells = []
    for row in rows:
        key_set = {None: "-", True: "yes", False: "NO"}[row["api_key_set"]]
        cells.append([row["alias"], row["provider"], row["model"] or _missing(row, "model"),
                      row["endpoint"] or _missing(row, "endpoint"), row["api_key_env"] or "-",
                      key_set])  # fmt: skip
    if not fits(out.width, fields, cells):  # blocks: a `-` (nothing) is left out, not listed
        cells = [["" if cell == "-" else cell for cell in row] for row in cells]
    print_listing(out, fields, cells)


def _alias_row(name: str, alias: ModelAlias) -> dict[str, Any]:
    """One alias as `models --json` shows it. `missing`: the settings a call through the alias
    needs and it lacks (an openai-compatible alias has no default endpoint): said in their
    place, where a runtime that does not exist (`started by runtime None`) was before."""
    import os

    from bashgym_models_providers.session import PROVIDERS, key_env, static_endpoint

    env = key_env(alias)
    runtime = PROVIDERS[alias.provider].runtime
    endpoint = static_endpoint(alias)
    if runtime is not None:  # the runtime serves it and names the model: nothing to set
        endpoint = endpoint or f"started by runtime {runtime!r}"
    needed = () if runtime is not None else (("endpoint", endpoint), ("model", alias.model))
    missing = [f"models.{name}.{key}" for key, value in needed if not value]
    return {
        "alias": name,
        "provider": alias.provider,
        "model": alias.model or (f"({runtime} default)" if runtime else None),
        "endpoint": endpoint,
        "missing": missing,
        "api_key_env": env,
        "api_key_set": bool(os.environ.get(env)) if env else None,
    }


def _missing(row: dict[str, Any], key: str) -> str:
    """`missing: set models.judge.endpoint` when the alias lacks `key`, else `-`."""
    setting = f"models.{row['alias']}.{key}"
    return f"missing: set {setting}" if setting in row["missing"] else "-"


def models_check(
    alias: Annotated[
        str | None,
        typer.Argument(
            metavar="ALIAS",
            help="Alias to check (one not configured is checked as `default`, as a run uses it); "
            "default: every configured alias.",
        ),
    ] = None,
) -> None:
    """Send one tiny request per alias; print latency or why it failed (exit 1 on failure)."""

    from bashgym_models_providers.session import ModelSession, check

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    if alias is not None and alias not in settings.models:  # a run would use `default` for it
        out.print(
            f"{escape(alias)} is not configured: runs use the `default` alias for it, checked here",
            highlight=False,
            soft_wrap=True,
        )
    names = [alias] if alias else [n for n in settings.models if not _implicit(n, settings)]
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


def _implicit(name: str, settings: Any) -> bool:
    """The `default` alias the settings keep for unlisted aliases, when the user configured
    others and not it: "every configured alias" leaves it out (checking it starts the embedded
    model, ~10 s), as it did before settings always kept it; `models check default` checks it."""
    from bashgym.settings import ModelAlias

    others = len(settings.models) > 1
    return name == "default" and others and settings.models[name] == ModelAlias()


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="List model aliases; check them.", invoke_without_command=True)
    models.callback()(models_list)
    models.command("check")(models_check)
    app.add_typer(models, name="models")
