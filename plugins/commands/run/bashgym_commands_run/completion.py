"""Shell completion for `bashgym run`: plugin names on the role flags (`-k <TAB>` lists the sinks)
and `--set <TAB>`: `ROLE.KEY=` for the option fields of the plugins named on the line so far (or
in its run file), and `TABLE.KEY=` for the plugins' settings tables.

Both read the plugin catalogue of the CLI's cached index (`bashgym_cli.index.catalogue`), so no
plugin is imported while completing; role names fall back to loading the plugins when there is
no fresh index (the registry is where names live). A name the catalogue does not know (a
`--plugin`'s) completes no options.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bashgym.plugins import current_host


def names_of(kind: str) -> Callable[[str], list[str]]:
    """A Typer `autocompletion` callback: the registered names of `kind` that start with what
    was typed."""

    def complete(incomplete: str) -> list[str]:
        try:
            names = _catalogue_names(kind)
            if names is None:
                names = current_host().registry.names(kind)
        except Exception:  # noqa: BLE001 -- completion must never print a traceback into a shell
            return []
        return [name for name in names if name.startswith(incomplete)]

    return complete


def _catalogue_names(kind: str) -> list[str] | None:
    from bashgym_cli.index import catalogue, owners_by_name

    cat = catalogue()
    return None if cat is None else sorted(owners_by_name(cat, kind))


# `run`'s parameters that name plugins, by role
ROLE_PARAMS = {
    "source": "source",
    "executor": "executor",
    "router": "router",
    "environment": "environment",
    "pipeline": "pipeline",
    "judge": "judge",
    "sink": "sink",
}


def complete_sets(ctx: Any, incomplete: str) -> list[str]:
    """A Typer `autocompletion` callback for `--set`: the `ROLE.KEY=` (`ROLE.PLUGIN.KEY=` where
    the run has several of a role, as `--set` wants them) and `TABLE.KEY=` that start with what
    was typed."""
    try:
        params = dict(ctx.params)
        if not params.get("run_file") and ctx.args:
            # `--set` is still waiting for its value, so click stopped before assigning the
            # positional arguments: the run file is the first one left over
            params["run_file"] = ctx.args[0]
        targets = set_targets(params)
    except Exception:  # noqa: BLE001 -- completion must never print a traceback into a shell
        return []
    return [target for target in targets if target.startswith(incomplete)]


def set_targets(params: dict[str, Any]) -> list[str]:
    """Every `--set` target for a `run` whose parsed parameters so far are `params`."""
    from bashgym_cli.index import catalogue, owners_by_name

    from bashgym.contracts import ROLES

    cat = catalogue()
    if cat is None:
        return []
    steps = _named_steps(params)
    targets: list[str] = []
    for role, kind in ROLES.items():
        names = owners_by_name(cat, kind)
        plugins = steps.get(role, [])
        if role == "environment" and not plugins and (steps.get("executor") or steps.get("router")):
            # the default environment is chosen at run time: any environment's options
            fields = sorted({f for n in names for f in _options(cat, kind, n, names)})
            targets += [f"{role}.{f}=" for f in fields]
            continue
        for plugin in plugins:
            prefix = f"{role}.{plugin}." if len(plugins) > 1 else f"{role}."
            targets += [f"{prefix}{f}=" for f in _options(cat, kind, plugin, names)]
    for table, described in sorted(cat["tables"].items()):
        targets += [f"{table}.{key}=" for key in described["keys"]]
    return targets


def _options(cat: dict[str, Any], kind: str, name: str, names: dict[str, list[str]]) -> list[str]:
    for plugin in names.get(name, [])[:1]:
        return list(cat["plugins"][plugin]["registers"][kind][name]["options"])
    return []


def _named_steps(params: dict[str, Any]) -> dict[str, list[str]]:
    """Each role's plugin names: the flags' where given, else the run file's (when it reads)."""
    steps: dict[str, list[str]] = {}
    run_file = params.get("run_file")
    if run_file:
        from bashgym_cli.runs import load_run_file

        try:
            spec = load_run_file(Path(run_file))
        except Exception:  # noqa: BLE001 -- a run file being written: no names from it
            spec = None
        if spec is not None:
            for role in ROLE_PARAMS:
                steps[role] = [s.plugin for s in spec.steps(role)]
    for role, param in ROLE_PARAMS.items():
        value = params.get(param)
        if value:
            steps[role] = [value] if isinstance(value, str) else list(value)
    return steps
