"""A run, declared: which source, executor or router, pipeline, judges and sinks, with options.

A front end builds a RunSpec (`bashgym run`: bashgym-commands-run); `resolve()` checks every name
against the registry and every option against its model before any work starts. `to_toml()` is
the run file that produced it, kept as `run.toml` so any run can be repeated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bashgym.contracts import ROLES, Judge
from bashgym.registry import PluginConflictError, Registered, Registry, UnknownNameError
from bashgym.text import did_you_mean, explain_validation

PLURAL_KEYS = {"judge": "judges", "sink": "sinks"}
SINGLE_ROLES = ("source", "executor", "router", "environment", "pipeline", "backend")
ROLE_KEYS = (*SINGLE_ROLES, *PLURAL_KEYS.values())


class RunConfigError(ValueError):
    """The run is misconfigured: a bad file, an unknown name or an invalid option."""


class StepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plugin: str
    options: dict[str, Any] = Field(default_factory=dict)


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: StepSpec | None = None
    executor: StepSpec | None = None
    router: StepSpec | None = None  # picks an executor per task (`Router.executors` names them)
    environment: StepSpec | None = None
    pipeline: StepSpec | None = None
    backend: StepSpec | None = None  # where rounds and tasks run (None: in this process)
    judges: list[StepSpec] = Field(default_factory=list)
    sinks: list[StepSpec] = Field(default_factory=list)
    num_records: int | None = Field(default=None, ge=1, le=10**9)  # (more: a typo, which crashed)
    out: Path | None = None
    seed: int = 0
    plugins: list[str] = Field(default_factory=list)
    top_up: bool = Field(False, description="Keep generating (in rounds) until num_records rows "
                         "pass every filter/judge.")  # fmt: skip
    max_rounds: int = Field(default=5, ge=1, description="Most generation rounds with top_up.")
    tables: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Plugin "
        "settings tables for this run (`[designer]`, `[workspace]`, ...): each over the configured "
        "table, e.g. [designer] max_conversation_restarts = 1.")  # fmt: skip
    fresh: bool = Field(False, description="Start over even if the run dir holds an unfinished "
                        "run of the same config (default: resume it).")  # fmt: skip

    @model_validator(mode="before")
    @classmethod
    def _tables_at_top(cls, doc: Any) -> Any:
        """A run file writes a plugin's table at the top (`[workspace]`), not under `tables`."""
        if isinstance(doc, dict):
            doc = dict(doc)
            for key in [k for k in doc if k not in cls.model_fields]:
                if isinstance(doc[key], dict):
                    doc.setdefault("tables", {})[key] = doc.pop(key)
        return doc

    def steps(self, role: str) -> list[StepSpec]:
        value = getattr(self, PLURAL_KEYS.get(role, role))
        return value if isinstance(value, list) else [value] if value else []

    def to_toml(self) -> str:
        """The spec as a run file that `bashgym run FILE` accepts back."""
        dump = self.model_dump(mode="json").items()
        doc = {k: v for k, v in dump if k not in (*ROLE_KEYS, "tables") and v not in (None, [], {})}
        doc.update(self.tables)
        for role in SINGLE_ROLES + tuple(PLURAL_KEYS):
            if tables := [{"plugin": s.plugin, **s.options} for s in self.steps(role)]:
                doc[PLURAL_KEYS.get(role, role)] = tables if role in PLURAL_KEYS else tables[0]
        return toml_dumps(doc)


def toml_dumps(doc: dict[str, Any]) -> str:
    """TOML text of `doc`; TOML has no null, so None values are left out."""
    return tomli_w.dumps(_drop_none(doc))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


@dataclass(frozen=True)
class Step:
    """A resolved step: the registered plugin object and its validated options."""

    role: str
    registered: Registered
    options: BaseModel

    @property
    def obj(self) -> Any:
        return self.registered.obj

    @property
    def name(self) -> str:
        return self.registered.name


@dataclass(frozen=True)
class ResolvedRun:
    spec: RunSpec
    source: Step | None
    pipeline: Step | None
    judges: list[Step]
    sinks: list[Step]
    executor: Step | None = None  # with a router: the run's `executor`, else its first pick
    environment: Step | None = None
    router: Step | None = None
    backend: Step | None = None

    def steps(self) -> list[Step]:
        return [s for role in SINGLE_ROLES if (s := getattr(self, role))] + self.judges + self.sinks

    def output_format(self) -> str:
        """The rows' format: the pipeline's, else traces from an executor, else the source's."""
        if self.executor is not None and self.pipeline is None:
            return "traces"
        step = self.pipeline or self.source
        return getattr(step.obj, "output_format", "rows") if step else "rows"


def resolve(
    spec: RunSpec, registry: Registry, *, require_sinks: bool = True,
    require_seed_source: bool = True,
) -> ResolvedRun:  # fmt: skip
    """Check names and options; raise RunConfigError naming the problem and the valid choices.
    A run needs a sink, and a `needs_seed` pipeline a source; looking at a pipeline without a run
    (`preview`, `validate`, `export`: its example seed) passes `require_*=False`."""
    try:
        registry.check()
    except PluginConflictError as exc:
        raise RunConfigError(str(exc)) from None
    for name, table in spec.tables.items():
        model = registry.settings_tables.get(name)
        if model is None:
            known = ", ".join(f"[{t}]" for t in (*ROLE_KEYS, *sorted(registry.settings_tables)))
            near = did_you_mean(name, (*ROLE_KEYS, *registry.settings_tables))
            raise RunConfigError(f"unknown table [{name}] in the run{near} (tables: {known})")
        try:
            model.model_validate(table, context={"run": True})  # (a check of the machine: here)
        except ValidationError as exc:
            why = explain_validation(exc, known=model.model_fields)
            raise RunConfigError(f"the run's [{name}] table: {why}") from None
    if spec.source is None and spec.pipeline is None and spec.executor is spec.router is None:
        raise RunConfigError(
            f"a run needs a source, a pipeline, or both (sources: {_names(registry, 'sources')}; "
            f"pipelines: {_names(registry, 'pipelines')})"
        )
    if require_sinks and not spec.sinks:
        raise RunConfigError(f"a run needs at least one sink (sinks: {_names(registry, 'sinks')})")

    def step(role: str, s: StepSpec) -> Step:
        options = dict(s.options)
        try:
            registered = registry.get(ROLES[role], s.plugin)
        except UnknownNameError as exc:
            raise RunConfigError(str(exc)) from None
        if role == "pipeline" and spec.num_records is not None:
            options.setdefault("num_records", spec.num_records)
        model = registered.obj.Options
        try:
            return Step(role, registered, model.model_validate(options))
        except ValidationError as exc:
            why = explain_validation(exc, known=model.model_fields)
            if any(e["type"] == "extra_forbidden" for e in exc.errors()):  # (a bad value: no list)
                why += f". Valid options: {', '.join(model.model_fields) or 'none'}"
            raise RunConfigError(f"{role} {s.plugin!r}: {why}") from None

    source = step("source", spec.source) if spec.source else None
    pipeline = step("pipeline", spec.pipeline) if spec.pipeline else None
    needs_seed = pipeline is not None and getattr(pipeline.obj, "needs_seed", False)
    if require_seed_source and source is None and needs_seed:
        raise RunConfigError(
            f"pipeline {pipeline.name!r} needs seed rows: add --source "  # type: ignore[union-attr]
            f"(sources: {_names(registry, 'sources')})"
        )
    judges = [step("judge", s) for s in spec.judges]
    for s in [pipeline] if pipeline else judges:
        adds = s.role == "pipeline" or type(s.obj).configure is not Judge.configure
        if adds and not getattr(s.obj, "runner", None):
            raise RunConfigError(
                f'{s.role} {s.name!r} names no runner: set `runner = "datadesigner"` (or '
                "another) on its class; bashgym-core 0.2 has no default runner"
            )
    runner = getattr(pipeline.obj, "runner", None) if pipeline is not None else None
    if runner is not None and runner not in registry.items["runners"]:
        raise RunConfigError(
            f"pipeline {pipeline.name!r} runs on the {runner!r} runner, which is not installed "  # type: ignore[union-attr]
            f"(pip install bashgym-runners-{runner})"
        )
    executor = step("executor", spec.executor) if spec.executor else None
    router = step("router", spec.router) if spec.router else None
    picks = router.obj.executors(router.options) if router else []
    if router and (not (picks or executor) or set(picks) - set(registry.items["executors"])):
        raise RunConfigError(
            f"router {router.name!r} names executors {', '.join(picks) or 'none'}; installed "
            f"executors: {_names(registry, 'executors')}"
        )
    executor = executor or (step("executor", StepSpec(plugin=picks[0])) if picks else None)
    if executor is not None and source is None:
        raise RunConfigError(
            f"executor {executor.name!r} needs tasks: add --source (e.g. -s prompts "
            "--set source.path=tasks.txt)"
        )
    environment = None
    if executor is not None:
        env_spec = spec.environment or StepSpec(plugin=default_environment(registry))
        environment = step("environment", env_spec)
        if (why := environment.obj.available()) is not None:
            raise RunConfigError(f"environment {environment.name!r} cannot run here: {why}")
        for ex in [executor, *(registry.get("executors", name) for name in picks)]:
            if ex.obj.needs_network and getattr(environment.options, "network", True) is False:
                raise RunConfigError(
                    f"executor {ex.name!r} calls its model from inside {environment.name!r}, "
                    "which has no network: add --set environment.network=true"
                )
    sinks = [step("sink", s) for s in spec.sinks]
    places = [(s.name, str(s.options.path)) for s in sinks if hasattr(s.options, "path")]
    if twice := [name for name, path in places if places.count((name, path)) > 1]:
        raise RunConfigError(f"two {twice[0]} sinks would write the same files: give each a path")
    backend = step("backend", spec.backend) if spec.backend else None
    steps = (source, pipeline, judges, sinks, executor, environment, router, backend)
    resolved = ResolvedRun(spec, *steps)
    for sink in sinks:  # before the run: a format the sink cannot write costs no generation
        if (why := sink.obj.refuses(sink.options, resolved.output_format())) is not None:
            raise RunConfigError(f"sink {sink.name!r}: {why}")
    return resolved


def _names(registry: Registry, kind: str) -> str:
    return ", ".join(registry.names(kind)) or "none"


def default_environment(registry: Registry) -> str:
    """The usable environment that isolates most (its `isolation`), e.g. bubblewrap, else local
    (the agent-run stage notes the fallback)."""
    ranked = sorted(registry.items["environments"].values(), key=lambda r: -r.obj.isolation)
    if not ranked:
        raise RunConfigError("an executor needs an environment, and none is installed")
    return next((r.name for r in ranked if r.obj.available() is None), ranked[0].name)


def resolved_toml(resolved: ResolvedRun, run_dir: Path) -> str:
    """The spec with every option filled in from the plugins' models (defaults included)."""

    def full(step: Step | None) -> dict[str, Any] | None:
        if step is None:
            return None
        return {"plugin": step.name, "options": step.options.model_dump(mode="json")}

    spec = resolved.spec.model_copy(update={"out": run_dir}).model_dump(mode="json")
    spec.update({role: full(getattr(resolved, role)) for role in SINGLE_ROLES})
    spec.update(judges=[full(s) for s in resolved.judges], sinks=[full(s) for s in resolved.sinks])
    return type(resolved.spec).model_validate(spec).to_toml()
