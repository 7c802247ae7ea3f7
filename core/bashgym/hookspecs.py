"""Every hook a BashGym plugin can implement: the contract for plugin authors.

A plugin is a module (a `bashgym` entry point, or `bashgym run --plugin`) implementing some of
these with `@bashgym.hookimpl`. Registration hooks get a `register(name, obj)` callback, so one
package can add several things (shapes in `bashgym.contracts`). An unknown hook name is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    import pandas as pd
    import typer

    from bashgym.contracts import Models, RunContext, Scrubbing
    from bashgym.events import Event
    from bashgym.records import Trace
    from bashgym.registry import Registry
    from bashgym.runspec import ResolvedRun
    from bashgym.settings import Settings

hookspec = HookspecMarker("bashgym")
hookimpl = HookimplMarker("bashgym")

Register = Callable[[str, Any], None]


@hookspec
def register_sources(register: Register) -> None:
    """Register Sources (`register("name", source)`): each reads inputs into rows or Traces."""


@hookspec
def register_pipelines(register: Register) -> None:
    """Register Pipelines: each builds a config its runner understands and names its rows' shape."""


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
    """Register settings tables this plugin owns (`register("designer", DesignerSettings)`): its
    `[designer]` in bashgym.toml, BASHGYM_DESIGNER__* and run files, validated by that model."""


@hookspec(firstresult=True)
def open_models(settings: Settings, registry: Registry, serve: bool) -> Models | None:
    """Return the model session of a run or command (`bashgym.contracts.Models`)."""


@hookspec(firstresult=True)
def open_scrubbing(settings: Settings, registry: Registry) -> Scrubbing | None:
    """Return the run's secret scrubbing (`bashgym.contracts.Scrubbing`); none: no run starts."""


@hookspec(firstresult=True)
def run_tasks(rows: pd.DataFrame, resolved: ResolvedRun, run: RunContext) -> pd.DataFrame | None:
    """Run each of `rows` as a Task on `resolved.executor`; return one trace row per task."""


@hookspec
def register_commands(app: typer.Typer) -> None:
    """Add Typer sub-commands to the `bashgym` CLI: `app` is the root `typer.Typer`."""


@hookspec
def on_event(event: Event, run: RunContext) -> None:
    """Observe every event of a run as it happens (`bashgym.events`; `run` is the RunContext)."""


@hookspec
def on_trace(trace: Trace, run: RunContext) -> None:
    """Observe each Trace a source or executor produced (how the orchestrator feeds data)."""


@hookspec
def on_run_end(summary: dict[str, Any], run: RunContext) -> None:
    """Observe a finished run: `summary` is what `run.json` holds (counts, usage, cost, timings)."""
