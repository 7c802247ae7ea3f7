"""The command index: each plugin command's name and help, cached, so `bashgym --help` and the
completion of command names list every plugin's commands without importing any plugin
(importing them all costs about a second: pandas, DataDesigner, litellm); a command's plugins
load when it is run (or its options completed), as click's "lazily loading subcommands" does.

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

FORMAT = 1  # bump when the file's shape changes


def lazy_app() -> typer.Typer:
    """The app `main` runs: lazy over a fresh index, or built whole (and indexed) on a miss."""
    key, path = index_path()
    entries = read_index(path, key)
    if entries is not None:
        return root_app(cls=lazy_group(entries, _real_commands))
    app = build_app()
    write_index(path, key, typer.main.get_command(app))
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
    try:
        data = json.loads(path.read_text())
        if data["key"] != key:
            return None
        for file, mtime in data["files"].items():
            if os.stat(file).st_mtime_ns != mtime:
                return None
        return list(data["commands"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_index(path: Path, key: str, group: Any) -> None:
    """Record each command of the built root `group` (a click group), and the files it came from."""
    commands = [
        {
            "name": name,
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
    data = {"key": key, "files": _source_files(), "commands": commands}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)  # a concurrent start reads the old file or the new, never half
    except OSError:
        tmp.unlink(missing_ok=True)


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


def _real_commands() -> MutableMapping[str, Any]:
    """Every command, built from the plugins (each loaded now), as the root group holds them."""
    return typer.main.get_command(build_app()).commands  # type: ignore[attr-defined]


def lazy_group(
    entries: list[dict[str, Any]], load: Callable[[], MutableMapping[str, Any]]
) -> type[TyperGroup]:
    """A root group class listing `entries` (stand-ins: name and help only) until a command is
    resolved (run, or its arguments completed): then every stand-in is replaced by what `load`
    returns, the real commands."""

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
                self.commands = load()
                self.loaded = True
            return super().resolve_command(ctx, args)

    return LazyGroup
