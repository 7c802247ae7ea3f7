"""The command index: each plugin command's name, help and plugin, cached, so `bashgym --help`
and the completion of command names list every plugin's commands without importing any plugin
(importing them all costs about a second: pandas, DataDesigner, litellm); a command's plugin
(and the default ones) load when it is run or its options completed, as click's "lazily loading
subcommands" does. `plugins` alone is built from every plugin: it lists them, and their commands.

The index also holds the plugin catalogue (`catalogue()`): per entry point, the non-registration
hooks it implements (`on_event`, `open_models`, `register_settings`, `register_commands`, ...) and
the names it registers per kind, each with its option field names (and a pipeline's `runner` and
`config_files`); and each settings table's owner and keys. From it a run loads only the plugins it
uses (`bashgym_cli.runs.run_host`) and `--set` completes option names without importing a plugin.

One JSON file per key in the user cache dir (platformdirs: `$XDG_CACHE_HOME/bashgym` on Linux).
The key: this interpreter's prefix, BASHGYM_LOAD_PLUGINS, and every `bashgym` entry point (name,
target, distribution and version), so installing, removing, upgrading or narrowing plugins
picks another file. Inside, the modification time of each file of each plugin's package and of
this CLI: an edited plugin in an editable install rebuilds the index. A miss builds the whole
app as before (every plugin loaded), runs it, and writes the index; a cache that cannot be
written only costs the next start the same.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import os
import sys
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import platformdirs
import typer
from typer.core import TyperCommand, TyperGroup

from bashgym.plugins import GROUP
from bashgym_cli.app import build_app, root_app

FORMAT = 2  # bump when the file's shape changes
WHOLE = frozenset({"plugins"})  # commands built from every plugin (`plugins` lists them all)


def lazy_app() -> typer.Typer:
    """The app `main` runs: lazy over a fresh index, or built whole (and indexed) on a miss."""
    key, path = index_path()
    entries = read_index(path, key)
    if entries is not None:
        return root_app(cls=lazy_group(entries, _real_commands))
    from bashgym.plugins import current_host

    app = build_app()
    write_index(path, key, typer.main.get_command(app), current_host())
    return app


def index_path() -> tuple[str, Path]:
    """The key of what is installed now, and the index file that belongs to it."""
    rows = sorted(
        "|".join(
            [
                ep.name,
                ep.value,
                ep.dist.name if ep.dist else "-",
                ep.dist.version if ep.dist else "-",
            ]
        )
        for ep in metadata.entry_points(group=GROUP)
    )
    parts = [str(FORMAT), sys.prefix, repr(os.environ.get("BASHGYM_LOAD_PLUGINS")), *rows]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return key, Path(platformdirs.user_cache_dir("bashgym")) / f"commands-{key[:24]}.json"


def read_index(path: Path, key: str) -> list[dict[str, Any]] | None:
    """The index's commands, or None when it is missing, unreadable, another key's, or any file
    it was built from has changed since."""
    data = _read(path, key)
    return None if data is None else list(data["commands"])


def _read(path: Path, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
        if data["key"] != key:
            return None
        for file, mtime in data["files"].items():
            if os.stat(file).st_mtime_ns != mtime:
                return None
        if not isinstance(data["commands"], list) or not isinstance(data["catalogue"], dict):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data


def catalogue() -> dict[str, Any] | None:
    """The installed plugins as the fresh index records them (see the module's docstring):

        {"plugins": {entry point: {"hooks": [...], "broken": bool, "registers": {kind: {name:
         {"options": [...], "runner": ..., "config_files": [...]}}}}}, "tables": {table:
         {"plugin": entry point, "keys": [...]}}}

    None when there is no index for what is installed now, or it is stale: callers then load
    every plugin, as before the index."""
    key, path = index_path()
    data = _read(path, key)
    return None if data is None else data["catalogue"]


def owners_by_name(cat: dict[str, Any], kind: str) -> dict[str, list[str]]:
    """Each name of `kind` in the catalogue `cat`, with the entry points that register it
    (several when two plugins register the same name: a conflict the registry reports)."""
    names: dict[str, list[str]] = {}
    for plugin, entry in cat["plugins"].items():
        for name in entry["registers"].get(kind, {}):
            names.setdefault(name, []).append(plugin)
    return names


def write_index(path: Path, key: str, group: Any, host: Any = None) -> None:
    """Record each command of the built root `group` (a click group), and the files it came from;
    with the `host` it was built from, each command's plugin and the plugin catalogue."""
    owners = {}
    if host is not None:
        for info in host.infos.values():
            for name in info.registers.get("commands", []):
                owners[name] = info.name
    commands = [
        {
            "name": name,
            "plugin": owners.get(name),
            "help": _text(command.help),
            "short_help": _text(command.short_help),
            "hidden": command.hidden is True,
            "deprecated": command.deprecated
            if isinstance(command.deprecated, str)
            else (command.deprecated is True),
            "panel": _text(getattr(command, "rich_help_panel", None)),
        }
        for name, command in group.commands.items()
    ]
    cat = _catalogue(host) if host is not None else {"plugins": {}, "tables": {}}
    data = {"key": key, "files": _source_files(), "commands": commands, "catalogue": cat}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)  # a concurrent start reads the old file or the new, never half
    except OSError:
        tmp.unlink(missing_ok=True)


def _catalogue(host: Any) -> dict[str, Any]:
    """What each entry point of `host` (every one loaded) implements and registers, read by
    calling its registration hooks with a recorder (objects are not instantiated or checked:
    the registry does that when a run loads the plugin)."""
    from bashgym.contracts import KINDS

    installed = {ep.name for ep in metadata.entry_points(group=GROUP)}
    kinds_hooks = {f"register_{kind}" for kind in KINDS}
    plugins: dict[str, Any] = {
        name: {
            "hooks": [h for h in info.hooks if h not in kinds_hooks],
            "registers": {},
            "broken": info.error is not None,  # a run loads it again, to warn (or find it mended)
        }
        for name, info in host.infos.items()
        if name in installed
    }
    for kind in KINDS:
        for impl in getattr(host.pm.hook, f"register_{kind}").get_hookimpls():
            entry = plugins.get(impl.plugin_name)
            if entry is None:
                continue
            found: dict[str, Any] = {}

            def record(name: str, obj: Any, _found: dict[str, Any] = found) -> None:
                _found[name] = _described(obj)

            try:
                impl.function(register=record)
            except Exception:  # noqa: BLE001 -- a broken hook: the plugin registers nothing here
                continue
            if found:
                entry["registers"][kind] = found
    tables: dict[str, Any] = {}
    for impl in host.pm.hook.register_settings.get_hookimpls():
        if impl.plugin_name not in plugins:
            continue

        def table(name: str, model: Any, _by: str = impl.plugin_name) -> None:
            tables.setdefault(name, {"plugin": _by, "keys": _fields(model)})

        try:
            impl.function(register=table)
        except Exception:  # noqa: BLE001 -- as above
            continue
    return {"plugins": plugins, "tables": tables}


def _described(obj: Any) -> dict[str, Any]:
    """A registered object's option field names, a pipeline's runner and config suffixes, and
    whether it runs code in an environment itself (`uses_environments = True` on the class, as
    csv-triangulation's pipeline: a run of it loads every environment, as one with an executor)."""
    runner = getattr(obj, "runner", None)
    suffixes = getattr(obj, "config_files", ())
    return {
        "options": _fields(getattr(obj, "Options", None)),
        "runner": runner if isinstance(runner, str) else None,
        "environments": getattr(obj, "uses_environments", False) is True,
        "config_files": [s for s in suffixes if isinstance(s, str)]
        if isinstance(suffixes, (list, tuple, set, frozenset))
        else [],
    }


def _fields(model: Any) -> list[str]:
    fields = getattr(model, "model_fields", None)
    return list(fields) if isinstance(fields, dict) else []


def _text(value: Any) -> str | None:
    """Text, or None for anything else (Typer leaves a `DefaultPlaceholder` where none was set)."""
    return value if isinstance(value, str) else None


def _source_files() -> dict[str, int]:
    """Modification times of every .py file in each loaded plugin's package and in this CLI."""
    tops = {ep.value.split(":")[0].split(".")[0] for ep in metadata.entry_points(group=GROUP)}
    folders = set()
    for top in [*tops, "bashgym_cli"]:
        file = getattr(sys.modules.get(top), "__file__", None)
        if file:
            folders.add(os.path.dirname(file))
    return {str(p): p.stat().st_mtime_ns for folder in sorted(folders) for p in _py_files(folder)}


def _py_files(folder: str) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        yield from (Path(root, f) for f in files if f.endswith(".py"))


def _real_commands(name: str, plugin: str | None) -> MutableMapping[str, Any]:
    """The real commands, as the root group holds them, for running command `name` (of entry
    point `plugin`): built from that plugin and the default ones, loaded now into a host of
    their own (`current_host()` stays unloaded: a run builds the one it needs); from every
    plugin (the current host) for `plugins`, or when the command is not found that way."""
    from bashgym.plugins import PluginHost

    if plugin is not None and name not in WHOLE:
        host = PluginHost(entry_points=False)
        host.load_entry_points(only={plugin})  # the default plugins load too
        commands = typer.main.get_command(build_app(host)).commands  # type: ignore[attr-defined]
        if name in commands:
            return commands  # type: ignore[no-any-return]
    return typer.main.get_command(build_app()).commands  # type: ignore[attr-defined]


def lazy_group(
    entries: list[dict[str, Any]], load: Callable[[str, str | None], MutableMapping[str, Any]]
) -> type[TyperGroup]:
    """A root group class listing `entries` (stand-ins: name and help only) until a command is
    resolved (run, or its arguments completed): then every stand-in is replaced by what
    `load(name, plugin)` returns, the real commands (`plugin`: the entry point that registers
    command `name`, as the index recorded it)."""
    plugins = {entry["name"]: entry.get("plugin") for entry in entries}

    class LazyGroup(TyperGroup):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.loaded = False
            for entry in entries:
                self.commands[entry["name"]] = TyperCommand(
                    name=entry["name"],
                    help=entry["help"],
                    short_help=entry["short_help"],
                    hidden=entry["hidden"],
                    deprecated=entry["deprecated"],
                    rich_help_panel=entry["panel"],
                )

        def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
            if not self.loaded and args and args[0] in self.commands:
                self.commands = load(args[0], plugins.get(args[0]))
                self.loaded = True
            return super().resolve_command(ctx, args)

    return LazyGroup
