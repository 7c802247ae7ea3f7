"""Run files and `--set` flags read into a RunSpec: the command line's grammar for a run, and
`resolve_spec`, how any command (`run`, the `pipeline` commands) turns them into a checked run.

A run file is the TOML the engine writes as `run.toml` (`RunSpec.to_toml`), with two
shorthands: a step may be just a plugin name, and a single `[judge]` or `[sink]` table may stand
for a one-item list. `--set ROLE.KEY=VALUE` edits an option of the spec it is given:

    num_records = 20
    plugins = ["my_pipeline.py"]      # loaded for this run only, like --plugin
    [source]
    plugin = "files"
    path = "examples/tasks.csv"
    [pipeline]
    plugin = "samplers"
    [[sinks]]                         # or a single [sink] table
    plugin = "parquet"
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bashgym.contracts import ROLES
from bashgym.plugins import DEFAULT_PLUGINS, PluginHost, PluginLoadError, current_host, use_host
from bashgym.registry import PluginConflictError, Registry
from bashgym.runspec import (
    PLURAL_KEYS,
    SINGLE_ROLES,
    ResolvedRun,
    RunConfigError,
    RunSpec,
    StepSpec,
    default_environment,
    resolve,
)
from bashgym.settings import Settings, SettingsError, load_settings
from bashgym.text import explain_validation
from bashgym_cli.app import fail, report_broken_plugins
from bashgym_cli.index import catalogue, owners_by_name
from bashgym_cli.loading import load_plugin
from bashgym_cli.values import non_finite


def _step(value: Any, where: str) -> StepSpec:
    if isinstance(value, str):
        return StepSpec(plugin=value)
    if isinstance(value, dict) and isinstance(value.get("plugin"), str):
        options = {k: v for k, v in value.items() if k != "plugin"}
        return StepSpec(plugin=value["plugin"], options=options)
    raise RunConfigError(
        f"{where}: expected a plugin name or a table with a 'plugin' key, got {value!r}"
    )


# kinds only a command looks up, never a run (`bashgym train` finds its trainer itself): a run
# leaves their plugins unloaded (the two trainers brought 77 modules, httpx among them: 64 ms of
# a claude-code run's start-up, measured with -X importtime)
COMMAND_ONLY_KINDS = {"trainers"}
TASK_LIMITS = ("concurrency", "task_timeout_s", "budget_usd")  # at a run file's top until 0.2


def spec_from_dict(doc: dict[str, Any], where: str = "run file") -> RunSpec:
    doc = dict(doc)
    for key in [k for k in TASK_LIMITS if k in doc]:  # now in the work-tasks plugin's [tasks]
        doc["tasks"] = {key: doc.pop(key), **(doc.get("tasks") or {})}
    for role, plural in PLURAL_KEYS.items():
        if role in doc:
            if plural in doc:
                raise RunConfigError(f"{where}: use either [{role}] or [[{plural}]], not both")
            doc[plural] = [doc.pop(role)]
    for role in SINGLE_ROLES:
        if role in doc:
            doc[role] = _step(doc[role], f"{where}: [{role}]")
    for plural in PLURAL_KEYS.values():
        items = doc.get(plural, [])
        if not isinstance(items, list):
            items = [items]
        doc[plural] = [_step(v, f"{where}: {plural}[{i}]") for i, v in enumerate(items)]
    try:
        return RunSpec.model_validate(doc)
    except ValidationError as exc:
        why = explain_validation(exc, known=[*RunSpec.model_fields, *PLURAL_KEYS])
        raise RunConfigError(f"{where}: {why}") from None


def load_run_file(path: Path) -> RunSpec:
    if path.is_dir():
        raise RunConfigError(f"run file {str(path)!r} is a folder, not a TOML file")
    if not path.is_file():
        raise RunConfigError(f"run file {str(path)!r} does not exist")
    try:
        doc = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RunConfigError(f"run file {str(path)!r} is not valid TOML: {exc}") from None
    spec = spec_from_dict(doc, where=str(path))
    base = path.parent
    local = [str((base / p).resolve()) if p.endswith(".py") else p for p in spec.plugins]
    return spec.model_copy(update={"plugins": local})


def parse_value(text: str) -> Any:
    """`--set` values: JSON or TOML literals when they parse (numbers, lists, true), else text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_sets(
    spec: RunSpec,
    assignments: list[str],
    *,
    default_environment: Callable[[], str] | None = None,
) -> RunSpec:
    """Apply `role.key=value` (or `role.plugin.key=value` when a role has several plugins).

    `environment.KEY=VALUE` on an executor run that names no environment sets an option of the
    one it will run in: `default_environment()` names it, so its options are checked like any
    other step's."""
    spec = spec.model_copy(deep=True)
    for item in assignments:
        target, sep, raw = item.partition("=")
        parts = target.strip().split(".")
        if sep and len(parts) == 2 and parts[0] not in ROLES:
            # a plugin's settings table for this run (`designer`, `workspace`, ...): `resolve()`
            # checks the table's name and keys against the plugin that owns it
            table = spec.tables.setdefault(parts[0], {})
            table[parts[1]] = _finite(parse_value(raw.strip()), item)
            continue
        if not sep or len(parts) < 2 or parts[0] not in ROLES:
            raise RunConfigError(
                f"--set {item!r}: expected ROLE.KEY=VALUE with ROLE one of "
                f"{', '.join(ROLES)}, or TABLE.KEY=VALUE for a plugin's settings table "
                "(e.g. --set source.path=data/, --set sink.val_fraction=0.1 or "
                "--set designer.buffer_size=10)"
            )
        role, rest = parts[0], parts[1:]
        steps = spec.steps(role)
        if not steps and role == "environment":
            spec = _with_default_environment(spec, item, default_environment)
            steps = spec.steps(role)
        if not steps:
            raise RunConfigError(f"--set {item!r}: this run has no {role}")
        if len(steps) > 1:
            named = [s for s in steps if s.plugin == rest[0]]
            if not named or len(rest) < 2:
                raise RunConfigError(
                    f"--set {item!r}: this run has several {role}s "
                    f"({', '.join(s.plugin for s in steps)}); use {role}.<plugin>.KEY=VALUE"
                )
            steps, rest = named, rest[1:]
        _assign(steps[0].options, rest, _finite(parse_value(raw.strip()), item))
    return spec


def _finite(value: Any, item: str) -> Any:
    """`inf`, `1e999` and `nan` would pass an option's bounds and mean no limit: refused."""
    if non_finite(value):
        raise RunConfigError(f"--set {item!r}: {value} is not a finite number")
    return value


def _with_default_environment(
    spec: RunSpec, item: str, default: Callable[[], str] | None
) -> RunSpec:
    if spec.executor is None and spec.router is None:
        raise RunConfigError(
            f"--set {item!r}: only a run with an executor (-x) or a router has an environment: "
            "it is where the executor's tasks run"
        )
    if default is None:
        return spec
    return spec.model_copy(update={"environment": StepSpec(plugin=default())})


def _assign(options: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        options = options.setdefault(key, {})
    options[path[-1]] = value


def config_file_suffix(name: str) -> str | None:
    """`--pipeline my_config.yaml`: the suffix a pipeline's `config_files` would claim, when
    `name` is an existing file with one; else None."""
    suffix = Path(name).suffix.lower()
    return suffix if suffix and Path(name).is_file() else None


def config_file_pipeline(spec: RunSpec, registry: Registry) -> RunSpec:
    """`--pipeline my_config.yaml`: the pipeline that runs config files of that kind (its
    `config_files` suffixes), given the file as its `path` option."""
    name = spec.pipeline.plugin if spec.pipeline else ""
    pipelines = registry.items["pipelines"]
    claimed = {s for r in pipelines.values() for s in getattr(r.obj, "config_files", ())}
    if name not in pipelines and Path(name).suffix.lower() in claimed and not Path(name).is_file():
        raise RunConfigError(f"pipeline file {name!r} does not exist")  # (not "unknown pipeline")
    suffix = config_file_suffix(name)
    if suffix is None or name in pipelines:
        return spec
    for registered in registry.items["pipelines"].values():
        if suffix in getattr(registered.obj, "config_files", ()):
            options = {"path": name, **spec.pipeline.options}  # type: ignore[union-attr]
            step = StepSpec(plugin=registered.name, options=options)
            return spec.model_copy(update={"pipeline": step})
    return spec


def plugins_for(spec: RunSpec, cat: dict[str, Any]) -> tuple[set[str], list[tuple[str, str]]]:
    """The entry points a run of `spec` uses, by the catalogue `cat` (`bashgym_cli.index`): every
    plugin with a hook other than registrations and commands (observers, settings tables, model
    access, scrubbing, task running); every one registering a kind no role names (runners: a
    pipeline names its own; runtimes, scrubbers: settings choose them), trainers aside (only
    `bashgym train` uses one); each role's plugin
    (every owner of the name: two are a conflict to report); every environment when the run has
    an executor or a router (the default one is chosen among them) or a step that runs code
    itself (`uses_environments`, e.g. csv-triangulation), and every executor when it has a
    router (its options name them); every plugin that failed when
    the index was built (the run warns about it, as before, or finds it mended). The default
    plugins are loaded by the host anyway. Also the (kind, name)s the catalogue does not know."""
    needed: set[str] = set(DEFAULT_PLUGINS)
    for plugin, entry in cat["plugins"].items():
        if entry["broken"] or set(entry["hooks"]) - {"register_commands"}:
            needed.add(plugin)
        if set(entry["registers"]) - set(ROLES.values()) - COMMAND_ONLY_KINDS:
            needed.add(plugin)
    unknown: list[tuple[str, str]] = []
    runs_code = spec.executor is not None or spec.router is not None
    for role, kind in ROLES.items():
        names = owners_by_name(cat, kind)
        if role == "executor" and spec.router:
            needed.update(p for owners in names.values() for p in owners)
        for step in spec.steps(role):
            owners = names.get(step.plugin) or _config_file_owners(cat, role, step.plugin)
            if owners:
                needed.update(owners)
                runs_code = runs_code or _uses_environments(cat, owners, kind, step.plugin)
            else:
                unknown.append((kind, step.plugin))
    if runs_code:
        needed.update(p for owners in owners_by_name(cat, "environments").values() for p in owners)
    return needed, unknown


def _uses_environments(cat: dict[str, Any], owners: list[str], kind: str, name: str) -> bool:
    """Whether step `name` of `kind` runs code in an environment itself (its catalogue entry)."""
    return any(
        cat["plugins"][owner]["registers"].get(kind, {}).get(name, {}).get("environments") is True
        for owner in owners
    )


def _config_file_owners(cat: dict[str, Any], role: str, name: str) -> list[str]:
    """`--pipeline my_config.yaml`: the plugins whose pipelines run such files."""
    suffix = config_file_suffix(name) if role == "pipeline" else None
    if suffix is None:
        return []
    return [
        plugin
        for plugin, entry in cat["plugins"].items()
        for described in entry["registers"].get("pipelines", {}).values()
        if suffix in described["config_files"]
    ]


def run_host(spec: RunSpec) -> PluginHost:
    """The host a run of `spec` uses, made current (`current_host()`): the one already current
    if any (a test's; every plugin, when the command index had to be built), else a host of
    only the plugins the run uses (`plugins_for`) and its `--plugin`s. Every plugin is loaded
    into it (BASHGYM_LOAD_PLUGINS still narrowing) when the index is missing or stale, or names
    a step that neither it nor a `--plugin` registers: the error then lists every valid name."""
    previous = use_host(None)
    use_host(previous)
    cat = None if previous is not None else catalogue()
    if previous is not None or cat is None:
        host = current_host()
        for extra in spec.plugins:
            load_plugin(host, extra)
        return host
    needed, unknown = plugins_for(spec, cat)
    host = PluginHost(entry_points=False)
    host.load_entry_points(only=needed)
    use_host(host)
    for extra in spec.plugins:
        load_plugin(host, extra)
    if unknown and any(name not in host.registry.items[kind] for kind, name in unknown):
        host.load_entry_points()  # every one left (those allowed by BASHGYM_LOAD_PLUGINS)
    return host


def _resolved(
    resolver: Callable[[RunSpec, Registry], ResolvedRun], spec: RunSpec, host: PluginHost
) -> ResolvedRun:
    """`resolver`'s answer; when it refuses the spec with only the run's own plugins loaded,
    its error is given again with every plugin loaded, so the choices it lists are all of them
    (`a run needs at least one sink (sinks: none)` told a new user no sink was installed)."""
    try:
        return resolver(spec, host.registry)
    except RunConfigError:
        host.load_entry_points()  # (only on this error: loading them all takes a second or two)
        return resolver(spec, host.registry)


def resolve_spec(
    build: Callable[[], RunSpec],
    *,
    sets: list[str] | None = None,
    maps: list[str] | None = None,
    resolver: Callable[[RunSpec, Registry], ResolvedRun] = resolve,
    on_error: Callable[[str], BaseException] = fail,
) -> tuple[PluginHost, Settings, ResolvedRun]:
    """What every command that runs or inspects a RunSpec does first: settings, the spec
    (`build`, then `--map NEW=OLD` and `--set` on it), the plugins it uses loaded (`run_host`)
    with its `--plugin`s, every name and option checked by `resolver`. A mistake in any of them
    is one red line and exit 2 (`on_error` says it: a command's `--json` says it as JSON);
    plugins that failed to load are warned about and the command goes on without them."""
    for pair in maps or []:
        new, eq, old = pair.partition("=")
        if not (new.strip() and eq and old.strip()):
            raise on_error(
                f"--map {pair!r}: write NEW=OLD, both names given (--map prompt=question)"
            )
    host: PluginHost | None = None
    settings: Settings | None = None
    try:
        spec = build()
        host = run_host(spec)
        settings = load_settings(host.registry.settings_tables)  # the tables plugins own too
        spec = config_file_pipeline(spec, host.registry)
        spec = apply_sets(
            spec,
            [*(f"source.map.{m}" for m in maps or []), *(sets or [])],
            default_environment=lambda: default_environment(host.registry),
        )
        resolved = _resolved(resolver, spec, host)
    except ValidationError as exc:  # a flag's value the run spec refuses (e.g. -n 10**23)
        raise on_error(redacted(f"the run: {explain_validation(exc)}", host, settings)) from None
    except (RunConfigError, SettingsError, PluginLoadError, PluginConflictError) as exc:
        raise on_error(redacted(str(exc), host, settings)) from None
    report_broken_plugins(host)
    return host, settings, resolved


def redacted(text: str, host: PluginHost | None, settings: Settings | None) -> str:
    """`text` with secrets redacted as a run's files are: an error quotes the value it refused
    (`path: does not exist (got '/tmp/ghp_…')`), which may be a token typed into --set or a run
    file. As it is only when no scrubbing can open (none installed, or settings unreadable)."""
    try:
        host, settings = host or current_host(), settings or Settings()
        scrubbing = host.hook.open_scrubbing(settings=settings, registry=host.registry)
    except Exception:  # noqa: BLE001 -- the error being reported matters more than its redaction
        return text
    return scrubbing.text(text) if scrubbing is not None and scrubbing.enabled else text
