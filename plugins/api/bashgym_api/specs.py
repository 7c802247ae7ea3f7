"""What a client sends, checked before anything starts: a job's run spec, a pipeline's options.

A run spec is the run file's document as JSON (`bashgym_cli.runs.spec_from_dict`: the same
shorthands, the same errors); it is resolved against the server's plugins exactly as `bashgym
run` resolves it, so an unknown name or a bad option is a 422 naming it, not a failed job. The
server loads every plugin once (`Plugins`), in a thread, so the first request does not stall
the event loop.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym_cli.runs import config_file_pipeline, spec_from_dict
from pydantic import ValidationError

from bashgym.plugins import PluginHost, PluginLoadError, current_host
from bashgym.registry import PluginConflictError
from bashgym.runspec import ResolvedRun, RunConfigError, RunSpec, resolve
from bashgym.settings import Settings, SettingsError, load_settings
from bashgym_api.jobs import JobError


class Plugins:
    """The server's plugin host and settings, loaded once on first use (about a second or
    more: every plugin, DataDesigner included)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[PluginHost, Settings] | None = None

    def get(self) -> tuple[PluginHost, Settings]:
        with self._lock:
            if self._loaded is None:
                host = current_host()
                try:
                    settings = load_settings(host.registry.settings_tables)
                except SettingsError as exc:
                    raise JobError(500, str(exc)) from None
                self._loaded = (host, settings)
            return self._loaded


@dataclass(frozen=True)
class CheckedSpec:
    spec: RunSpec
    resolved: ResolvedRun | None  # None when the spec loads plugin files (checked by the child)

    @property
    def label(self) -> str:
        step = self.spec.pipeline or self.spec.source or self.spec.executor
        name = step.plugin if step else "run"
        return Path(name).stem if "/" in name or "." in name else name


def run_spec(doc: Any, plugins: Plugins, *, allow_plugin_files: bool) -> CheckedSpec:
    """A job's spec checked as `bashgym run` would check it; JobError 4xx naming the problem."""
    if not isinstance(doc, dict):
        raise JobError(422, "a job's spec is a JSON object with the fields of a run file")
    if "out" in doc:
        raise JobError(422, "leave out 'out': the server gives each job its own run directory")
    if doc.get("fresh"):
        raise JobError(422, "a job never starts over ('fresh'): create a new job instead")
    try:
        spec = spec_from_dict(doc, where="job spec")
    except RunConfigError as exc:
        raise JobError(422, str(exc)) from None
    files = [p for p in spec.plugins if p.endswith(".py")]
    if files and not allow_plugin_files:
        raise JobError(
            403, f"this server does not load plugin files ({', '.join(files)}): set "
            "[api] allow_plugin_files = true to allow it (code execution for API callers)",
        )  # fmt: skip
    if spec.plugins:
        return CheckedSpec(spec, None)  # the child loads them and reports a problem in job.log
    host, _ = plugins.get()
    try:
        spec = config_file_pipeline(spec, host.registry)
        return CheckedSpec(spec, resolve(spec, host.registry))
    except (RunConfigError, PluginLoadError, PluginConflictError) as exc:
        raise JobError(422, str(exc)) from None


def pipeline_spec(name: str, body: dict[str, Any], plugins: Plugins) -> ResolvedRun:
    """A pipeline with options (and an optional source, judges, tables), resolved as the
    `validate` and `preview` commands resolve it: no sink needed, the example seed allowed."""
    host, _ = plugins.get()
    if name not in host.registry.items["pipelines"]:
        known = ", ".join(host.registry.names("pipelines")) or "none"
        raise JobError(404, f"unknown pipeline {name!r} (pipelines: {known})")
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise JobError(422, "'options' is a JSON object of the pipeline's options")
    doc: dict[str, Any] = {"pipeline": {"plugin": name, **options}}
    for key in ("source", "judges", "tables", "seed", "num_records"):
        if body.get(key) is not None:
            doc[key] = body[key]
    try:
        spec = spec_from_dict(doc, where=f"pipeline {name!r}")
        return resolve(spec, host.registry, require_sinks=False, require_seed_source=False)
    except (RunConfigError, PluginLoadError, PluginConflictError) as exc:
        raise JobError(422, str(exc)) from None


def describe_pipelines(plugins: Plugins) -> list[dict[str, Any]]:
    """Every pipeline with its description and its options' JSON schema."""
    host, _ = plugins.get()
    out = []
    for name in host.registry.names("pipelines"):
        registered = host.registry.get("pipelines", name)
        obj = registered.obj
        try:
            schema = obj.Options.model_json_schema()
        except Exception as exc:  # noqa: BLE001 -- one odd options model never breaks the list
            schema = {"error": f"no JSON schema: {exc}"}
        defaults_ok = True
        try:
            obj.Options()
        except ValidationError:
            defaults_ok = False
        out.append(
            {
                "name": name,
                "plugin": registered.plugin,
                "description": obj.summary(),
                "output_format": str(getattr(obj, "output_format", "rows")),
                "needs_seed": bool(getattr(obj, "needs_seed", False)),
                "config_files": list(getattr(obj, "config_files", ())),
                "runs_with_defaults": defaults_ok,
                "options_schema": schema,
            }
        )
    return out
