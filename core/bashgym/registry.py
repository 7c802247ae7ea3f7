"""The names plugins registered, per kind, each attributed to the plugin that registered it:
each plugin's `register_*` is called on its own, so a duplicate is an error naming both, and
`bashgym plugins` lists names per plugin."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bashgym.contracts import BASES, KINDS

if TYPE_CHECKING:
    import pluggy

    from bashgym.plugins import PluginInfo
    from bashgym.settings import SettingsTable

SINGULAR = {kind: kind[:-1] for kind in KINDS}


class PluginConflictError(Exception):
    """Two plugins registered the same name for the same kind."""


class UnknownNameError(LookupError):
    """A run named a source/pipeline/... that no loaded plugin registered."""


@dataclass(frozen=True)
class Registered:
    kind: str
    name: str
    obj: Any
    plugin: str


class Registry:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Registered]] = {kind: {} for kind in KINDS}
        self.settings_tables: dict[str, type[SettingsTable]] = {}  # table name -> its model
        self.conflicts: list[str] = []

    @classmethod
    def collect(cls, pm: pluggy.PluginManager, infos: dict[str, PluginInfo]) -> Registry:
        registry = cls()
        for kind in KINDS:
            for impl in getattr(pm.hook, f"register_{kind}").get_hookimpls():
                plugin = impl.plugin_name
                info = infos.get(plugin)

                def register(name: str, obj: Any, _kind: str = kind, _plugin: str = plugin) -> None:
                    registry._add(_kind, name, obj, _plugin)

                try:
                    impl.function(register=register)
                except Exception as exc:  # noqa: BLE001 -- a broken hook disables that plugin only
                    if info is not None:
                        info.error = f"register_{kind} failed: {type(exc).__name__}: {exc}"
                    continue
                if info is not None:
                    names = [r.name for r in registry.items[kind].values() if r.plugin == plugin]
                    info.registers[kind] = sorted(names)
        owners: dict[str, str] = {}
        for impl in pm.hook.register_settings.get_hookimpls():

            def table(name: str, model: type[SettingsTable], _by: str = impl.plugin_name) -> None:
                if (first := owners.setdefault(name, _by)) != _by:
                    why = f"settings table [{name}] is registered by plugins {first!r} and {_by!r}"
                    registry.conflicts.append(why)
                registry.settings_tables[name] = model

            impl.function(register=table)
        return registry

    def _add(self, kind: str, name: str, obj: Any, plugin: str) -> None:
        if isinstance(obj, type):
            obj = obj()
        base = BASES[kind]
        if missing := [m for m in base.__abstractmethods__ if not callable(getattr(obj, m, None))]:
            raise TypeError(f"{SINGULAR[kind]} {name!r} lacks {', '.join(sorted(missing))}()")
        if (existing := self.items[kind].get(name)) is not None and existing.plugin != plugin:
            self.conflicts.append(
                f"{SINGULAR[kind]} {name!r} is registered by both plugin {existing.plugin!r} and"
                f" plugin {plugin!r}; uninstall one, or narrow BASHGYM_LOAD_PLUGINS"
            )
            return
        self.items[kind][name] = Registered(kind, name, obj, plugin)

    def check(self) -> None:
        """Raise if any name is registered twice (before a run does any work)."""
        if self.conflicts:
            raise PluginConflictError("\n".join(self.conflicts))

    def names(self, kind: str) -> list[str]:
        return sorted(self.items[kind])

    def get(self, kind: str, name: str) -> Registered:
        try:
            return self.items[kind][name]
        except KeyError:
            choices = self.names(kind)
            close = difflib.get_close_matches(name, choices, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            valid = ", ".join(choices) if choices else "none are installed"
            raise UnknownNameError(
                f"unknown {SINGULAR[kind]} {name!r}.{hint} Valid {kind}: {valid}"
            ) from None
