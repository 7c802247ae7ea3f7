"""Every hook a BashGym plugin can implement: the contract for plugin authors.

A plugin is a module (found through the `bashgym` entry-point group, or passed with
`bashgym run --plugin`) that implements some of these with `@bashgym.hookimpl`. Registration hooks
receive a `register(name, obj)` callback, so one package can contribute several things; the object
shapes are in `bashgym.contracts`. A hook name that is not below is an error naming the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pluggy import HookimplMarker, HookspecMarker

hookspec = HookspecMarker("bashgym")
hookimpl = HookimplMarker("bashgym")

Register = Callable[[str, Any], None]


@hookspec
def register_sources(register: Register) -> None:
    """Register Sources (`register("name", source)`): each reads inputs into rows or Traces."""


@hookspec
def register_pipelines(register: Register) -> None:
    """Register Pipelines: each builds a DataDesigner config and names its output format."""


@hookspec
def register_judges(register: Register) -> None:
    """Register Judges: each adds scoring columns and/or keeps or drops rows, with reasons."""


@hookspec
def register_executors(register: Register) -> None:
    """Register Executors: each runs one Task (async) in a workspace and returns a WorkerResult."""


@hookspec
def register_environments(register: Register) -> None:
    """Register Environments: where an executor's commands and file edits happen."""


@hookspec
def register_routers(register: Register) -> None:
    """Register Routers: each picks an executor name for a Task."""


@hookspec
def register_runtimes(register: Register) -> None:
    """Register model Runtimes: each serves a provider (e.g. `embedded`) on 127.0.0.1 on demand."""


@hookspec
def register_scrubbers(register: Register) -> None:
    """Register Scrubbers: each finds secrets; the engine redacts with the configured ones."""


@hookspec
def register_runners(register: Register) -> None:
    """Register Runners: each generates rows from pipelines' configs (e.g. `datadesigner`)."""


@hookspec
def register_sinks(register: Register) -> None:
    """Register Sinks: each writes a finished dataset and says what it wrote."""


@hookspec
def register_settings(register: Register) -> None:
    """Register the settings tables this plugin owns (`register("designer", DesignerSettings)`,
    a `bashgym.settings.SettingsTable`): `[designer]` in bashgym.toml, `BASHGYM_DESIGNER__*` and
    a run file's `[designer]` table are then validated by that model."""


@hookspec(firstresult=True)
def open_models(settings: Any, registry: Any, serve: bool) -> Any:
    """Return the model session of a run or command (`bashgym.contracts.Models`)."""


@hookspec(firstresult=True)
def run_tasks(rows: Any, resolved: Any, run: Any) -> Any:
    """Run each of `rows` as a Task on `resolved.executor`; return one trace row per task."""


@hookspec
def register_commands(app: Any) -> None:
    """Add Typer sub-commands to the `bashgym` CLI: `app` is the root `typer.Typer`."""


@hookspec
def on_event(event: Any, run: Any) -> None:
    """Observe every event of a run as it happens (`bashgym.events`; `run` is the RunContext)."""


@hookspec
def on_record(record: dict[str, Any], run: Any) -> None:
    """Observe each kept record (scrubbed) just before the sinks write it."""


@hookspec
def on_trace(trace: Any, run: Any) -> None:
    """Observe each Trace a source or executor produced (how the orchestrator feeds data)."""


@hookspec
def on_run_end(summary: dict[str, Any], run: Any) -> None:
    """Observe a finished run: `summary` is what `run.json` holds (counts, usage, cost, timings)."""
