"""The inspection commands: `plugins`, `options ROLE NAME` and `config show`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python
from rich.text import Text

from bashgym.contracts import ROLES
from bashgym.plugins import current_host
from bashgym.registry import UnknownNameError
from bashgym.runspec import toml_dumps
from bashgym.settings import ModelAlias, SettingsError, config_files, load_settings
from bashgym_commands_inspect.listing import Field, print_listing, print_trimmed
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


# the kinds that are not a run's roles but have options a user sets elsewhere: `options
# trainer trl` shows what `bashgym train --set trainer.KEY=VALUE` takes; runtimes and scrubbers
# are listed for what they accept, with how (or whether) a run sets them
EXTRA_ROLES = {"trainer": "trainers", "runtime": "runtimes", "scrubber": "scrubbers"}


def options_command(
    role: Annotated[
        str,
        typer.Argument(metavar="ROLE", help=f"One of: {', '.join([*ROLES, *EXTRA_ROLES])}."),
    ],
    name: Annotated[str, typer.Argument(metavar="NAME", help="The registered name, e.g. files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the options a plugin accepts: type (allowed values too), default and meaning.

    Read from the plugin's pydantic model (its JSON schema for types, its fields for defaults),
    so what is shown is what `--set ROLE.OPTION=VALUE` and run files accept. In --json a
    required option has `"required": true` and `"default": null`.
    """
    kind = ROLES.get(role) or EXTRA_ROLES.get(role)
    if kind is None:
        raise fail(f"unknown role {role!r}; valid roles: {', '.join([*ROLES, *EXTRA_ROLES])}")
    try:
        registered = current_host().registry.get(kind, name)
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    rows = option_rows(role, registered.obj.Options)
    if as_json:
        typer.echo(json.dumps({"plugin": registered.plugin, "options": rows}, indent=2))
        return
    _print_options(role, name, registered, rows)


def _print_options(role: str, name: str, registered: Any, rows: list[dict[str, Any]]) -> None:
    heading = Text.assemble(
        (f"{role} {name}", "bold"),
        f" (from plugin {registered.plugin}): {registered.obj.summary()}",
    )
    print_trimmed(out, heading)
    if role in NOTES:
        print_trimmed(out, Text(NOTES[role].format(name=name)))
    if not rows:  # said, not an empty table of headers
        out.print(f"{role} {name} has no options", highlight=False, markup=False)
        return
    cells = [[row["option"], row["type"], _default_cell(row), _description_cell(row)]
             for row in rows]  # fmt: skip
    fields = [Field("option", name=True), Field("type"), Field("default"), Field("description")]
    print_listing(out, fields, cells)


NOTES = {
    "trainer": "Set with: bashgym train --trainer {name} --set trainer.KEY=VALUE",
    "runtime": "A run does not set these (there is no --set runtime.*): it serves each model "
    "alias with these defaults, except an option marked `a run: models.NAME.KEY`, which it takes "
    "from the alias (bashgym.toml). `bashgym serve` sets some with its flags (bashgym serve "
    "--help).",
}


def option_rows(role: str, model: type[BaseModel]) -> list[dict[str, Any]]:
    """One dict per option, as `options --json` lists them. `default` is the field's own
    default, a default_factory's value included (the JSON schema has none for those, which
    showed as null); `null` for a required option, which `"required": true` marks apart from
    a default that is the string "required". A runtime's rows add `run_setting`: where a run
    sets the option (the model alias's field of the same name, which is all `Runtime.serve`
    gets), or null when a run cannot."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    by_key = {info.alias or key: info for key, info in model.model_fields.items()}
    rows = []
    for key, prop in schema.get("properties", {}).items():
        info = by_key[key]
        row: dict[str, Any] = {
            "option": f"{role}.{key}",
            "type": _schema_type(prop, defs),
            "required": info.is_required(),
            "default": None if info.is_required() else _default(info),
            "description": prop.get("description", ""),
        }
        if role == "runtime":
            row["run_setting"] = f"models.NAME.{key}" if key in ModelAlias.model_fields else None
        rows.append(row)
    return rows


def _default(info: FieldInfo) -> Any:
    """The default as JSON data: a factory's value is computed (`[]`, or the cores here)."""
    return to_jsonable_python(info.get_default(call_default_factory=True, validated_data={}))


def _default_cell(row: dict[str, Any]) -> str:
    return "required" if row["required"] else json.dumps(row["default"])


def _description_cell(row: dict[str, Any]) -> str:
    if "run_setting" not in row:
        return row["description"]
    where = row["run_setting"]
    mark = f"(a run: {where})" if where else "(not set by a run)"
    return f"{mark} {row['description']}".strip()


def _schema_types(prop: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """A JSON-schema property as short type names, one per alternative (the caller joins them
    with ` | ` once each: `date | datetime | None` is two strings and a null, `str | null`)."""
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop or "const" in prop:
        return [json.dumps(v) for v in prop.get("enum", [prop.get("const")])]
    if "anyOf" in prop:
        return [t for p in prop["anyOf"] for t in _schema_types(p, defs)]
    kind = prop.get("type", "any")
    if kind == "array":
        return [f"list[{_schema_type(prop.get('items', {}), defs)}]"]
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return [f"dict[str, {_schema_type(prop['additionalProperties'], defs)}]"]
    names = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
    return [names.get(kind, str(kind))]


def _schema_type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON-schema property as a short type: `"a" | "b"` for a Literal or enum, each
    alternative once."""
    return " | ".join(dict.fromkeys(_schema_types(prop, defs)))


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
