"""The inspection commands: `plugins`, `options ROLE NAME` and `config show`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out

from bashgym.contracts import ROLES
from bashgym.plugins import current_host
from bashgym.registry import UnknownNameError
from bashgym.runspec import toml_dumps
from bashgym.settings import SettingsError, config_files, load_settings
from bashgym_commands_inspect.listing import Field, print_listing
from bashgym_commands_inspect.masking import mask_secrets


def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List installed plugins: distribution, version, hooks, and the names each registers."""
    host = current_host()
    registry = host.registry
    rows = [
        {
            "name": i.name,
            "distribution": i.distribution,
            "version": i.version,
            "module": i.module,
            "hooks": i.hooks,
            "registers": {k: v for k, v in i.registers.items() if v},
            **({"error": i.error} if i.error else {}),
        }
        for i in sorted(host.infos.values(), key=lambda i: i.name)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        fields = [Field("plugin", name=True), Field("distribution", name=True), Field("version"),
                  Field("registers"), Field("hooks")]  # fmt: skip
        print_listing(
            out,
            fields,
            [
                [
                    row["name"],
                    row["distribution"] or "-",
                    row["version"] or "-",
                    f"failed: {row['error']}"
                    if "error" in row
                    else "; ".join(f"{k}: {', '.join(v)}" for k, v in row["registers"].items()),
                    ", ".join(row["hooks"]),
                ]
                for row in rows
            ],
        )
    if registry.conflicts:
        raise fail("\n".join(registry.conflicts), code=1)


def options_command(
    role: Annotated[str, typer.Argument(help=f"One of: {', '.join(ROLES)}, scrubber.")],
    name: Annotated[str, typer.Argument(help="The registered name, e.g. files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the options a plugin accepts: type (allowed values too), default and meaning.

    Read from the plugin's pydantic model through its JSON schema, so what is shown is what
    `--set ROLE.OPTION=VALUE` and run files accept.
    """
    extra = {"runtime": "runtimes", "scrubber": "scrubbers"}
    kind = ROLES.get(role) or extra.get(role)
    if kind is None:
        raise fail(f"unknown role {role!r}; valid roles: {', '.join([*ROLES, *extra])}")
    try:
        registered = current_host().registry.get(kind, name)
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    schema = registered.obj.Options.model_json_schema()
    rows = [
        {
            "option": f"{role}.{key}",
            "type": _schema_type(prop, schema.get("$defs", {})),
            "default": "required" if key in schema.get("required", []) else prop.get("default"),
            "description": prop.get("description", ""),
        }
        for key, prop in schema.get("properties", {}).items()
    ]
    if as_json:
        typer.echo(json.dumps({"plugin": registered.plugin, "options": rows}, indent=2))
        return
    out.print(
        f"[bold]{role} {name}[/] (from plugin {registered.plugin}): {registered.obj.summary()}"
    )
    cells = []
    for row in rows:
        default = row["default"] if row["default"] == "required" else json.dumps(row["default"])
        cells.append([row["option"], row["type"], default, row["description"]])
    fields = [Field("option", name=True), Field("type"), Field("default"), Field("description")]
    print_listing(out, fields, cells)


def _schema_type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON-schema property as a short type: `"a" | "b"` for a Literal or enum."""
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop or "const" in prop:
        return " | ".join(json.dumps(v) for v in prop.get("enum", [prop.get("const")]))
    if "anyOf" in prop:
        return " | ".join(_schema_type(p, defs) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list[{_schema_type(prop.get('items', {}), defs)}]"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"dict[str, {_schema_type(prop['additionalProperties'], defs)}]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}.get(
        kind, str(kind)
    )


def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print the resolved settings (env > ./bashgym.toml > user bashgym.toml), secrets masked."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from None
    data = mask_secrets(settings.model_dump(mode="json"))
    files = [str(p) for p in config_files() if p.is_file()]
    if as_json:
        typer.echo(json.dumps({"files": files, "settings": data}, indent=2))
        return
    out.print(
        f"# files read: {', '.join(files) or 'none (defaults and BASHGYM_* env only)'}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    # soft_wrap: a long value stays on its line (a wrapped TOML line is no longer TOML)
    out.print(toml_dumps(data), highlight=False, markup=False, soft_wrap=True)
