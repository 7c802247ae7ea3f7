"""What runs in a backend's worker process (a Ray slot, a local pool's process): the run's
context rebuilt there, one call or one shard in it.

A worker gets a `Blueprint` (plain data: the run dir, its settings, the plugins to load; never a
key: a model alias names its env var, which each worker's environment sets: a Ray node's where
its raylet starts, a local pool's process inherits the driver's), rebuilds the plugin host once
per worker process, and opens a fresh RunContext per call whose events are collected instead of
written: they travel back with the result and the driver emits them on the run, so events.jsonl,
run.json and the usage tally stay on the driver (the one truth).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as metadata
import json
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym import contracts
from bashgym.contracts import Generated, RunContext
from bashgym.events import Event, EventBus
from bashgym.plugins import GROUP, PluginHost, current_host, use_host
from bashgym.runspec import Step
from bashgym.settings import Settings, load_settings
from bashgym.text import one_line

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun

SHARD_SEED_STRIDE = 1_000_003  # shard j of a round samples with seed + j * this (0: the run's)


@dataclass(frozen=True)
class Blueprint:
    """How to rebuild a run's context on a worker: plain data, no secret."""

    run_dir: str
    settings: dict[str, Any]  # Settings.model_dump(mode="json"): aliases name env vars only
    seed: int
    plugins: tuple[str, ...] = ()  # the run's `--plugin`s (same paths on every node)
    load_plugins: str | None = None  # the driver's BASHGYM_LOAD_PLUGINS
    cwd: str | None = None  # relative paths in options mean the same on a node that has it
    # The entry points the driver loaded (None: all): the CLI loads only those a run uses, and
    # a worker that loaded every plugin paid for imports the run never needs (seconds: the
    # router's scikit-learn alone is 2 s of CPU per worker).
    entry_points: tuple[str, ...] | None = None

    @classmethod
    def of(cls, run: RunContext, resolved: ResolvedRun) -> Blueprint:
        """`run`'s blueprint, as the driver opening a backend for it sees it."""
        return cls(
            run_dir=str(run.run_dir.absolute()),
            settings=run.settings.model_dump(mode="json"),
            seed=run.seed,
            plugins=tuple(resolved.spec.plugins),
            load_plugins=os.environ.get("BASHGYM_LOAD_PLUGINS"),
            cwd=os.getcwd(),
            entry_points=_loaded_entry_points(),
        )

    @property
    def key(self) -> str:
        text = json.dumps([self.settings, self._plugins_key()], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _plugins_key(self) -> str:
        return json.dumps([self.plugins, self.load_plugins, self.entry_points])


def _loaded_entry_points() -> tuple[str, ...]:
    """The `bashgym` entry points this process's plugin host has loaded (the driver's)."""
    loaded = current_host().infos
    return tuple(sorted(ep.name for ep in metadata.entry_points(group=GROUP) if ep.name in loaded))


@dataclass
class Outcome:
    """What a worker sends back: the value (or the error it raised) and every event."""

    value: Any = None
    events: list[Event] = field(default_factory=list)
    error: BaseException | None = None
    seconds: float = 0.0  # spent on the worker (context, call): the rest of a round trip: transport


@dataclass(frozen=True)
class StepRef:
    """A resolved step by name and options: the worker takes the object from its registry and
    validates the options with that object's own model. The options travel as plain data: a
    plugin may declare its options class anywhere (inside a function, say), which the standard
    library's pickle (a local process pool's) cannot send, and the worker has the class anyway."""

    role: str
    kind: str
    name: str
    options: dict[str, Any]  # the step's options, model_dump(mode="json")

    @classmethod
    def of(cls, step: Step) -> StepRef:
        options = step.options.model_dump(mode="json")
        return cls(step.role, step.registered.kind, step.name, options)

    def resolve(self, run: RunContext) -> Step:
        assert run.registry is not None
        registered = run.registry.get(self.kind, self.name)
        return Step(self.role, registered, registered.obj.Options.model_validate(self.options))


@dataclass(frozen=True)
class Shard:
    """Rows [start, stop) of round `round`: its seed rows, its number among the round's."""

    index: int
    start: int
    stop: int
    round: int
    resume: bool
    runner: str
    pipeline: StepRef | None
    judges: tuple[StepRef, ...]
    seed: pd.DataFrame | None

    @property
    def folder(self) -> str:
        """Under the run dir; named by its rows, so a resumed round finds its own files (and a
        round split differently starts those shards afresh)."""
        return f"shards/round-{self.round}/rows-{self.start}-{self.stop}"


_HOSTS: dict[str, PluginHost] = {}  # by the plugins a run loads
_SETTINGS: dict[str, Settings] = {}  # by the whole blueprint


def _prepared(bp: Blueprint) -> tuple[PluginHost, Settings]:
    """The plugin host and settings of `bp`, built once per worker process: loading the
    plugins takes seconds (their imports), and a worker process runs many tasks and runs."""
    plugins = bp._plugins_key()
    if plugins not in _HOSTS:
        if bp.load_plugins is not None:
            os.environ["BASHGYM_LOAD_PLUGINS"] = bp.load_plugins
        host = PluginHost(entry_points=False)
        only = None if bp.entry_points is None else set(bp.entry_points)
        host.load_entry_points(only=only)
        if bp.plugins:
            from bashgym_cli import load_plugin  # the CLI's public loader: files, modules, dists

            for spec in bp.plugins:
                load_plugin(host, spec)
        _HOSTS[plugins] = host
    host = _HOSTS[plugins]
    if bp.key not in _SETTINGS:
        _SETTINGS[bp.key] = load_settings(host.registry.settings_tables, **bp.settings)
    use_host(host)  # a plugin that asks for the process's host gets the run's
    return host, _SETTINGS[bp.key]


def warm(bp: Blueprint, model_client: bool = True) -> int:
    """What a worker's first task would otherwise pay, done when the worker starts: `bp`'s
    plugins loaded, the run's scrubbing built (its detectors compile: seconds) and, with
    `model_client`, the model client agent tasks use imported (litellm: seconds; a worker that
    only runs DataDesigner shards never needs it); the process id."""
    host, settings = _prepared(bp)
    host.hook.open_scrubbing(settings=settings, registry=host.registry)
    if model_client:
        from bashgym_models_providers import load_litellm  # the model client, as a run loads it

        load_litellm()
    return os.getpid()


@contextlib.contextmanager
def _context(bp: Blueprint, run_dir: Path, seed: int) -> Any:
    """A RunContext for one call, its events collected into the yielded list."""
    host, settings = _prepared(bp)
    if bp.cwd and os.path.isdir(bp.cwd):
        os.chdir(bp.cwd)
    events: list[Event] = []
    bus = EventBus(None)
    bus.subscribe(events.append)
    scrubbing = host.hook.open_scrubbing(settings=settings, registry=host.registry)
    models = contracts.open_models(settings, host.registry, host.hook)
    run = RunContext(run_dir, settings, seed, models, bus, registry=host.registry,
                     scrubbing=scrubbing)  # fmt: skip
    try:
        with models:
            yield run, events
    finally:
        if run._store is not None:
            run._store.close()


def _portable(exc: BaseException) -> BaseException:
    """`exc` if it pickles (the driver re-raises it as it is), else a one-line RuntimeError."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 -- any pickling failure: send the words instead
        return RuntimeError(one_line(exc))
    return exc


async def call(bp: Blueprint, fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """`await fn(run, *args)` in a context rebuilt from `bp` (Backend.call's worker side), on
    the worker's event loop beside its other tasks."""
    events: list[Event] = []
    started = time.perf_counter()
    try:
        with _context(bp, Path(bp.run_dir), bp.seed) as (run, events):
            value = await fn(run, *args)
        return Outcome(value, events, seconds=time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 -- sent back with the events it emitted first
        return Outcome(None, events, _portable(exc), time.perf_counter() - started)


def shard(bp: Blueprint, part: Shard) -> Outcome:
    """One shard of a round: a normal runner call in the shard's own folder."""
    events: list[Event] = []
    seed = bp.seed + part.index * SHARD_SEED_STRIDE
    try:
        with _context(bp, Path(bp.run_dir) / part.folder, seed) as (run, events):
            return Outcome(_generate(run, part), events)
    except Exception as exc:  # noqa: BLE001 -- see `call`
        return Outcome(None, events, _portable(exc))


def shard_here(run: RunContext, part: Shard) -> Outcome:
    """One shard in this process (a backend's driver, which would otherwise wait idle), as a
    worker runs it: in the shard's folder, with the run's own registry, settings, models and
    scrubbing, its events collected to be replayed with the others'."""
    events: list[Event] = []
    bus = EventBus(None)
    bus.subscribe(events.append)
    seed = run.seed + part.index * SHARD_SEED_STRIDE
    here = RunContext(run.run_dir / part.folder, run.settings, seed, run.models, bus,
                      registry=run.registry, scrubbing=run.scrubbing)  # fmt: skip
    try:
        return Outcome(_generate(here, part), events)
    except Exception as exc:  # noqa: BLE001 -- re-raised by the backend, as a worker's
        return Outcome(None, events, exc)
    finally:
        if here._store is not None:
            here._store.close()


def _generate(run: RunContext, part: Shard) -> Generated:
    """`part`'s rows: its runner's `generate` in `run` (the shard's own context)."""
    assert run.registry is not None
    runner = run.registry.get("runners", part.runner).obj
    pipeline = part.pipeline.resolve(run) if part.pipeline else None
    judges = [j.resolve(run) for j in part.judges]
    out = runner.generate(pipeline, judges, part.seed, part.stop - part.start, run,
                          round=part.round, resume=part.resume)  # fmt: skip
    if not isinstance(out, Generated):
        raise TypeError(f"runner {part.runner!r} returned {type(out).__name__}")
    return out
