"""`--plugin SPEC` (and a run file's `plugins = [...]`): a plugin loaded for one command only,
like `pytest -p`: a local .py file, an installed distribution (its `bashgym` entry points), or
an importable module. The kernel's host only knows entry points and plugin objects (`add`);
turning what a user typed into one of those is the command line's job.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from bashgym.plugins import GROUP, PluginHost, PluginLoadError


def load_plugin(host: PluginHost, spec: str) -> list[str]:
    """Load `spec` into `host`; return the names it was registered under. PluginLoadError
    (one line) when it cannot be found or imported."""
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        return [_load_file(host, path)]
    try:
        dist = metadata.distribution(spec)
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        names = {ep.name for ep in dist.entry_points if ep.group == GROUP}
        if not names:
            raise PluginLoadError(f"distribution {spec!r} declares no {GROUP!r} entry points")
        host.load_entry_points(only=names)
        failed = [f"{n}: {host.infos[n].error}" for n in sorted(names) if host.infos[n].error]
        if failed:
            raise PluginLoadError("plugin failed to import: " + "; ".join(failed))
        return sorted(names)
    try:
        module = importlib.import_module(spec)
    except ImportError as exc:
        raise PluginLoadError(
            f"plugin {spec!r} is not a .py file, an installed distribution or an importable"
            f" module ({exc})"
        ) from exc
    if spec not in host.infos:
        host.add(module, spec)
    return [spec]


def _load_file(host: PluginHost, path: Path) -> str:
    if not path.is_file():
        raise PluginLoadError(f"plugin file {str(path)!r} does not exist")
    name = path.stem
    if name in host.infos:
        return name
    module_name = f"bashgym_local_plugin_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path.resolve())
    if spec is None or spec.loader is None:  # Python loads only source or bytecode suffixes
        raise PluginLoadError(f"plugin file {str(path)!r} is not a Python file (.py)")
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise PluginLoadError(
            f"plugin file {str(path)!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    host.add(module, name)
    return name
