"""Plugin manager: `bashgym` entry points (narrowed by BASHGYM_LOAD_PLUGINS) and plugin objects
loaded, each plugin's registrations attributed to it; the process's host.

pluggy's `load_setuptools_entrypoints` stops at the first plugin that fails to import; this loop
records the failure under its name and goes on: one broken plugin never takes BashGym down."""

from __future__ import annotations

import importlib.metadata as metadata
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from bashgym import hookspecs

if TYPE_CHECKING:
    from bashgym.registry import Registry

GROUP = "bashgym"
# Plugins that load even when BASHGYM_LOAD_PLUGINS narrows the set (as llm's DEFAULT_PLUGINS):
# installed with the kernel, so narrowing never turns model access, scrubbing, `bashgym run`,
# the inspection commands (`plugins`, `options`, `config show`), the progress display, agent
# runs or generation in rounds off.
DEFAULT_PLUGINS = frozenset(
    {"models-providers", "scrubbers-secrets", "commands-run", "commands-inspect",
     "observers-progress", "work-tasks", "work-rounds"}
)  # fmt: skip


@dataclass
class PluginInfo:
    """One plugin as `bashgym plugins` shows it; `error` is set when it could not load."""

    name: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    hooks: list[str] = field(default_factory=list)
    registers: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None


class PluginLoadError(Exception):
    """A plugin asked for by name (`--plugin`) could not be found or imported."""


def _allowed() -> set[str] | None:
    raw = os.environ.get("BASHGYM_LOAD_PLUGINS")
    return None if raw is None else {p.strip() for p in raw.split(",") if p.strip()}


class PluginHost:
    """The pluggy manager plus what is known about each plugin."""

    def __init__(self, *, entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        self._registry: Registry | None = None
        if entry_points:
            self.load_entry_points()

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def load_entry_points(self, only: set[str] | None = None) -> None:
        """Load every entry point of the group, or those named in `only`/BASHGYM_LOAD_PLUGINS."""
        allowed = only if only is not None else _allowed()
        for ep in metadata.entry_points(group=GROUP):
            dist = ep.dist.name if ep.dist else None
            if allowed is not None and not {ep.name, dist} & (allowed | DEFAULT_PLUGINS):
                continue
            if ep.name in self.infos:
                continue
            version = ep.dist.version if ep.dist else None
            try:
                self.add(ep.load(), ep.name, distribution=dist, version=version)
            except Exception as e:  # noqa: BLE001 -- any import error: report it, keep going
                error = str(e) if isinstance(e, PluginLoadError) else f"{type(e).__name__}: {e}"
                self.infos[ep.name] = PluginInfo(ep.name, dist, version, ep.value, error=error)

    def add(
        self, plugin: Any, name: str, *, distribution: str | None = None, version: str | None = None
    ) -> PluginInfo:
        """Register a plugin object (module, class or instance) under `name`."""
        if name in self.infos and self.infos[name].error is None:
            raise PluginLoadError(f"a plugin named {name!r} is already loaded")
        self.pm.register(plugin, name=name)
        try:  # a misspelled hook would otherwise be silently never called
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name)
            raise PluginLoadError(f"plugin {name!r}: {exc}") from None
        module = getattr(plugin, "__name__", None) or type(plugin).__module__
        hooks = sorted(c.name for c in self.pm.get_hookcallers(plugin) or [])
        info = self.infos[name] = PluginInfo(name, distribution, version, module, hooks=hooks)
        self._registry = None
        return info

    def remove(self, name: str) -> None:
        self.pm.unregister(name=name)
        self.infos.pop(name, None)
        self._registry = None

    @property
    def registry(self) -> Registry:
        """Everything registered, by kind and name (collected once, after loading)."""
        if self._registry is None:
            # here, not at the top: the registry needs the contracts (pydantic, about 0.09 s),
            # which `bashgym --help` and the command index never read
            from bashgym.registry import Registry

            self._registry = Registry.collect(self.pm, self.infos)
        return self._registry

    def failures(self) -> list[PluginInfo]:
        return [info for info in self.infos.values() if info.error]


_host: PluginHost | None = None


def current_host() -> PluginHost:
    """The process's plugin host, loaded on first use (tests swap it with `use_host`)."""
    global _host
    if _host is None:
        _host = PluginHost()
    return _host


def use_host(host: PluginHost | None) -> PluginHost | None:
    """Install `host` as the current one; returns the previous (for fixtures to restore)."""
    global _host
    previous, _host = _host, host
    return previous
