"""Every hook a BashGym plugin can implement: the contract for plugin authors.

A plugin is a module (a `bashgym` entry point, or `bashgym run --plugin`) implementing some of
these with `@bashgym.hookimpl`. Registration hooks get a `register(name, obj)` callback, so one
package can add several things (shapes in `bashgym.contracts`). An unknown hook name is an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    import pandas as pd
    import typer

    from bashgym.contracts import Generated, Models, RunContext, Scrubbing
    from bashgym.events import Event
    from bashgym.records import Trace
    from bashgym.registry import Registry
    from bashgym.runspec import ResolvedRun
    from bashgym.settings import Settings

hookspec = HookspecMarker("bashgym")
hookimpl = HookimplMarker("bashgym")

Register = Callable[[str, Any], None]


# One registration hook per kind, `register_<kind>(register)`: a plugin calls `register("name",
# obj)` for each object of that kind it adds; the object's shape is the kind's base class in
# `bashgym.contracts` (Source, Pipeline, ...); tests/test_plugins.py keeps both tables in step.
REGISTERS = {
    "sources": "Sources: each reads inputs into rows or Traces.",
    "pipelines": "Pipelines: each builds a config for its runner and names its rows' shape.",
    "judges": "Judges: each adds scoring columns and/or keeps or drops rows, with reasons.",
    "executors": "Executors: each runs one Task (async) in a workspace, returns a WorkerResult.",
    "environments": "Environments: where an executor's commands and file edits happen.",
    "routers": "Routers: each picks an executor for a Task and says why (a `Route`).",
    "trainers": "Trainers: each fine-tunes the student on a run's rows (`bashgym train`).",
    "runtimes": "model Runtimes: each serves a provider (e.g. `embedded`) on 127.0.0.1 on demand.",
    "scrubbers": "Scrubbers: each finds secrets; the run's Scrubbing applies the configured ones.",
    "runners": "Runners: each generates rows from pipelines' configs (e.g. `datadesigner`).",
    "sinks": "Sinks: each writes a finished dataset and says what it wrote.",
    "backends": "Backends: each runs a run's generation rounds and tasks elsewhere (a cluster).",
}


def _register_hook(kind: str, doc: str) -> Callable[[Register], None]:
    def spec(register: Register) -> None: ...

    spec.__name__ = spec.__qualname__ = f"register_{kind}"
    spec.__doc__ = f"Register {doc}"
    return hookspec(spec)  # type: ignore[no-any-return]


globals().update({f"register_{k}": _register_hook(k, doc) for k, doc in REGISTERS.items()})


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
    """Run each of `rows` as a Task on `resolved.executor` or its router's pick; a row each."""


@hookspec(firstresult=True)
def generate_rows(
    seed: pd.DataFrame | None, runner: str, resolved: ResolvedRun, run: RunContext,
    judge: Callable[[pd.DataFrame], pd.DataFrame], resume: bool,
) -> Generated | None:  # fmt: skip
    """Make the run's rows (from `seed`) through `runner`, each batch judged with `judge`."""


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
