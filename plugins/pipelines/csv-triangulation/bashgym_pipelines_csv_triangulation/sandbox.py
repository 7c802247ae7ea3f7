"""Which environment the warm workers run in, found by name in the plugin registry.

Environments are plugins like this one, so they are looked up at run time and never imported:
`bubblewrap` where it is available (no network, a read-only system, own PID namespace), else
`local` with a note in the run (its limits hold, but files outside the workspace and, where
`unshare` fails, the network are not protected). A named environment that cannot run here is an
input error, not a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bashgym.contracts import Environment, InputError
from bashgym.plugins import current_host
from bashgym.text import explain_validation
from bashgym_pipelines_csv_triangulation.options import SandboxOptions
from bashgym_pipelines_csv_triangulation.pool import SandboxPool

if TYPE_CHECKING:
    from bashgym.contracts import RunContext
    from bashgym.registry import Registry

PREFERRED = ("bubblewrap", "local")


@dataclass
class Chosen:
    name: str
    environment: Environment[Any]
    options: Any
    note: str | None  # what the run should know (a fallback to local)


def registry_of(run: RunContext | None) -> Registry:
    """The run's registry (`run.registry`); a context built by hand without one, as a test's,
    gets the process's plugin host."""
    if run is not None and run.registry is not None:
        return run.registry
    return current_host().registry


def choose(registry: Registry, options: SandboxOptions) -> Chosen:
    """The environment to run workers in (see the module docstring)."""
    installed = registry.items["environments"]
    if options.environment is not None:
        name = options.environment
        if name not in installed:
            raise InputError(
                f"csv-triangulation: no environment {name!r} is installed "
                f"(installed: {', '.join(sorted(installed)) or 'none'})"
            )
        why = installed[name].obj.available()
        if why is not None:
            raise InputError(f"csv-triangulation: environment {name!r} cannot run here: {why}")
        return _chosen(name, installed[name].obj, options, None)
    reasons = []
    for name in PREFERRED:
        if name not in installed:
            reasons.append(f"{name} is not installed")
            continue
        why = installed[name].obj.available()
        if why is None:
            note = None
            if name != PREFERRED[0]:
                note = (
                    f"csv-triangulation: code runs in environment {name} ({'; '.join(reasons)}): "
                    "its limits hold, but files outside the scratch folder are not protected"
                )
            return _chosen(name, installed[name].obj, options, note)
        reasons.append(f"{name}: {why}")
    raise InputError(
        "csv-triangulation needs an environment to run code in: " + "; ".join(reasons)
        + " (install bashgym-environments-bubblewrap or bashgym-environments-local)"
    )  # fmt: skip


def _chosen(name: str, environment: Environment[Any], options: SandboxOptions, note: str | None):
    try:
        env_options = environment.Options.model_validate(options.environment_options)
    except ValidationError as exc:
        raise InputError(
            f"csv-triangulation: sandbox.environment_options for {name}: {explain_validation(exc)}"
        ) from None
    return Chosen(name, environment, env_options, note)


def make_pool(chosen: Chosen, options: SandboxOptions, root: Path, csv: Path | None) -> SandboxPool:
    return SandboxPool(
        chosen.environment,
        chosen.options,
        root,
        csv=csv,
        limits=options.worker_limits(),
        size=options.workers,
        preload=options.preload,
        start_timeout_s=options.start_timeout_s,
    )
