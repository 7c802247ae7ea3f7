"""What a client sends, checked before anything starts: a job's run spec, a pipeline's options.

A run spec is the run file's document as JSON (`bashgym_cli.runs.spec_from_dict`: the same
shorthands, the same errors); it is resolved against the server's plugins exactly as `bashgym
run` resolves it, so an unknown name or a bad option is a 422 naming it, not a failed job. The
server loads every plugin once (`Plugins`), in a thread, so the first request does not stall
the event loop.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym_cli.runs import config_file_pipeline, redacted, spec_from_dict
from pydantic import ValidationError

from bashgym.contracts import InputError
from bashgym.engine import with_run_overrides
from bashgym.plugins import PluginHost, PluginLoadError, current_host
from bashgym.registry import PluginConflictError
from bashgym.runspec import ResolvedRun, RunConfigError, RunSpec, resolve
from bashgym.settings import Settings, SettingsError, load_settings
from bashgym_api.jobs import JobError

REDACTED = re.compile(r"\[REDACTED:([^\]]+)\]")  # how the scrubbing marks what it redacted


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
    """A job's spec checked as `bashgym run` would check it, and refused when it holds a
    secret (`refuse_secrets`); JobError 4xx naming the problem (a value it quotes redacted)."""
    try:
        checked = _checked_spec(doc, plugins, allow_plugin_files=allow_plugin_files)
    except JobError as exc:  # e.g. "categories: ... (got 'ghp_...')": the token never echoed
        raise JobError(exc.status, _redacted(exc.message, plugins)) from None
    host, settings = plugins.get()
    if checked.resolved is not None:  # the job's own tables ([scrub] allow, ...) as its run's
        try:
            settings = with_run_overrides(settings, checked.resolved)
        except InputError as exc:
            raise JobError(422, str(exc)) from None
    refuse_secrets(doc, host, settings, "the job's spec")
    return checked


def refuse_secrets(doc: Any, host: PluginHost, settings: Settings, what: str) -> None:
    """A 422 naming every field of `doc` that the run's scrubbing would redact.

    Why refuse rather than store it redacted: the job's child runs the spec written to the
    job's folder (job.toml), and a resume runs it again, maybe from a restarted server; a
    redacted copy would run a different job, and a raw one sits on disk and is returned by
    `GET /api/jobs/ID`. A secret belongs in the server's environment, named by the option
    that reads it (e.g. a model's `api_key_env`); what the scrubbing mistakes for one is
    allowed with `[scrub] allow`. Detection is the run's own scrubbing, so what is refused
    here is exactly what run.toml would have redacted."""
    try:
        scrubbing = host.hook.open_scrubbing(settings=settings, registry=host.registry)
    except InputError as exc:
        raise JobError(422, str(exc)) from None
    if scrubbing is None or not scrubbing.enabled:
        return  # no scrubbing: the run itself refuses to start (or scrubbing is turned off)
    found = []
    for where, text in _strings(doc, ""):
        scrubbed = scrubbing.text(text)
        if scrubbed != text:
            kinds = sorted(set(REDACTED.findall(scrubbed))) or ["secret"]
            found.append(f"{where or 'the body'} ({', '.join(kinds)})")
    if found:
        raise JobError(
            422, f"{what} holds a secret at {'; '.join(found)}: it would be stored in the "
            "job's folder and returned by the API, so it must hold none. Put the secret in an env "
            "var of the server and name that variable in the option that reads it (e.g. "
            "api_key_env), or let the value through with the [scrub] allow setting",
        )  # fmt: skip


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string in a JSON document (keys too), with where it is: `pipeline.x[0]`."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            yield from _strings(str(key), f"{inner} (the key)")
            yield from _strings(item, inner)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def _redacted(message: str, plugins: Plugins) -> str:
    """`message` as the server's scrubbing redacts it (as it is when none can open), the way
    the CLI redacts a refused run's error line (`bashgym_cli.runs.redacted`)."""
    try:
        host, settings = plugins.get()
    except Exception:  # noqa: BLE001 -- the error being answered matters more than redaction
        return message
    return redacted(message, host, settings)


def _checked_spec(doc: Any, plugins: Plugins, *, allow_plugin_files: bool) -> CheckedSpec:
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


PIPELINE_KEYS = ("source", "judges", "tables", "seed", "num_records")  # beside its options


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
    for key in PIPELINE_KEYS:
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
