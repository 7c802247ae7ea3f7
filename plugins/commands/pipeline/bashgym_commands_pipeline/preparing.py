"""A pipeline's builder assembled outside a run, as the run would assemble it.

`validate`, `preview` and `export` must look at the config `bashgym run` would generate from:
the pipeline's build, every judge's configure, the seed attached ORDERED. They differ from a
run in what they may lack: no sink (nothing is written) and no source (the pipeline's
`example_seed` stands in). A pipeline or judge that raises while building becomes one
InputError naming it, and a temporary run dir and the model session are cleaned up on close.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym_designer.designer import make_designer, prepare_environment
from bashgym_designer.rounds import assemble
from bashgym_work_rounds import requested_records

from bashgym.contracts import InputError, RunContext, Scrubbing, open_models
from bashgym.engine import open_scrubbing, source_batches
from bashgym.runspec import ResolvedRun, RunConfigError, RunSpec, Step, resolve

if TYPE_CHECKING:
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder, ModelProvider
    from rich.console import Console

    from bashgym.plugins import PluginHost
    from bashgym.registry import Registry
    from bashgym.settings import Settings


def resolve_pipeline(spec: RunSpec, registry: Registry) -> ResolvedRun:
    """Check the pipeline, source and judge names and options of `spec`.

    Unlike a run, no sink is required, and a `needs_seed` pipeline may lack a source (a
    preview prints, and falls back on the pipeline's `example_seed`); but a pipeline is.
    """
    if spec.pipeline is None:
        raise RunConfigError(
            f"name a pipeline (pipelines: {', '.join(registry.names('pipelines')) or 'none'})"
        )
    return resolve(spec, registry, require_sinks=False, require_seed_source=False)


@dataclass
class Prepared:
    """A pipeline's assembled builder, with the run context it was built in.

    Holds a model session (servers it started stop on `close()`) and, when no run dir was given,
    a temporary one that `close()` removes. Use it as a context manager.
    """

    resolved: ResolvedRun
    run: RunContext
    builder: DataDesignerConfigBuilder
    seed: pd.DataFrame | None
    seed_origin: str | None  # e.g. "source files" or "example seed of pipeline x"
    origins: dict[str, str] = field(default_factory=dict)  # column -> "pipeline" / "judge j"
    scrubbing: Scrubbing | None = None
    _owned_dir: Path | None = None

    @property
    def pipeline(self) -> Step:
        assert self.resolved.pipeline is not None
        return self.resolved.pipeline

    @property
    def num_records(self) -> int:
        """Rows a run would request: `pipeline.num_records`, else one per seed row, else 10."""
        return requested_records(self.resolved, self.seed)  # the engine's own count

    def designer(self, providers: list[ModelProvider]) -> Any:
        """A DataDesigner writing under this run dir, as a run's would."""
        return make_designer(self.run.run_dir, providers, self.run.settings)

    def keep_dir(self) -> None:
        """Leave the run dir in place on `close()` (its log is named in an error message)."""
        self._owned_dir = None

    def close(self) -> None:
        if self.run.models is not None:
            self.run.models.close()
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            redact_message(exc, self.run)
        self.close()


def redact_message(exc: BaseException, run: RunContext) -> None:
    """The error's message redacted in place, as the engine does for a run's: the command prints
    it, and an input (a source path, an option, a file's row quoted back) may hold a secret that
    must not reach the terminal. Only a plain one-text message is rewritten (a run's rule too)."""
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (run.redact(exc.args[0]),)


def prepare(
    resolved: ResolvedRun,
    host: PluginHost,
    settings: Settings,
    *,
    serve: bool,
    run_dir: Path | None = None,
    console: Console | None = None,
) -> Prepared:
    """Read the seed, build the pipeline's builder, let the judges configure it, attach the seed.

    The seed comes from the source when the spec has one, else from the pipeline's
    `example_seed(options)`; a `needs_seed` pipeline with neither is an InputError naming `-s`.
    A pipeline or judge that raises while building is reported as an InputError naming it.
    """
    if resolved.pipeline is None:
        raise InputError("nothing to prepare: the run names no pipeline")
    prepare_environment(settings)  # before DataDesigner's first import, as for a run
    # the run's own scrubbing, on the context before anything is written: the log, the failure
    # records and DataDesigner's files under the run dir are redacted with it (README "Secret
    # scrubbing"), as are the rows and lines a preview prints
    scrubbing = open_scrubbing(settings, host)
    owned = None
    if run_dir is None:
        owned = run_dir = Path(tempfile.mkdtemp(prefix=f"bashgym-{resolved.pipeline.name}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    models = open_models(settings, host.registry, host.hook, serve=serve)
    run = RunContext(
        run_dir=run_dir,
        settings=settings,
        seed=resolved.spec.seed,
        models=models,
        scrubbing=scrubbing,
    )
    try:
        seed, origin = read_seed(resolved, run, host, console)
        if seed is not None and origin and origin.startswith("source"):
            seed = scrubbing.frame(seed)  # as in a run: no model sees an unscrubbed row
        builder, origins = assemble(resolved.pipeline, resolved.judges, run, seed)
    except BaseException as exc:
        redact_message(exc, run)
        models.close()
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        raise
    return Prepared(resolved, run, builder, seed, origin, origins, scrubbing, owned)


def read_seed(
    resolved: ResolvedRun, run: RunContext, host: PluginHost, console: Console | None
) -> tuple[pd.DataFrame | None, str | None]:
    """The seed rows and where they came from: the source, else the pipeline's example seed."""
    pipeline = resolved.pipeline
    assert pipeline is not None
    if resolved.source is not None:
        import pandas as pd  # (only where a source is read: see the module's imports)

        seed = pd.concat(list(source_batches(resolved.source, run)), ignore_index=True)
        if len(seed) == 0:
            raise InputError(f"source {resolved.source.name!r} produced no rows")
        return seed, f"source {resolved.source.name}"
    seed = pipeline.obj.example_seed(pipeline.options)
    if seed is not None:
        return seed, f"example seed of pipeline {pipeline.name}"
    if getattr(pipeline.obj, "needs_seed", False):
        sources = ", ".join(host.registry.names("sources"))
        raise InputError(
            f"pipeline {pipeline.name!r} needs seed rows and ships no example seed: "
            f"pass -s SOURCE (sources: {sources or 'none'})"
        )
    return None, None
