"""Look at a pipeline without a run: list, validate, preview and export its DataDesigner config.

A full run reads every source row and writes sinks; a pipeline author iterating on prompts wants
the config checked in a second (`validate`), a handful of rows on screen (`preview`), or the
config handed to the `data-designer` CLI (`export`). All three start from `prepare()`, which
assembles the builder exactly as the engine's run does (build, judges configure, seed attached
ORDERED), so what is checked here is what `bashgym run` would generate.

`serve=False` resolves runtime-served aliases (the embedded model) without starting a server:
listing, validating and exporting never call a model.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bashgym.contracts import InputError, RunContext
from bashgym.models import NOT_SERVED_ENDPOINT, PROVIDERS, ModelSession
from bashgym.runspec import ROLES, ResolvedRun, RunConfigError, RunSpec, Step, StepSpec

if TYPE_CHECKING:
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder, ModelConfig, ModelProvider
    from rich.console import Console

    from bashgym.plugins import PluginHost
    from bashgym.registry import Registered, Registry
    from bashgym.settings import Settings

DEFAULT_NUM_RECORDS = 10  # same default as a run: one row per seed row, else 10
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


# --------------------------------------------------------------------------------------------
# Resolving: like `runspec.resolve`, but a preview has no sinks and may use an example seed.


def resolve_pipeline(spec: RunSpec, registry: Registry) -> ResolvedRun:
    """Check the pipeline, source and judge names and options of `spec` (sinks are ignored).

    `runspec.resolve` insists on a sink and, for `needs_seed` pipelines, on a source; neither
    applies here (a preview prints, and falls back to the pipeline's `example_seed`).
    """
    from bashgym.registry import PluginConflictError, UnknownNameError
    from bashgym.runspec import _explain

    try:
        registry.check()
    except PluginConflictError as exc:
        raise RunConfigError(str(exc)) from None
    if spec.pipeline is None:
        raise RunConfigError(
            f"name a pipeline (pipelines: {', '.join(registry.names('pipelines')) or 'none'})"
        )

    def step(role: str, s: StepSpec) -> Step:
        try:
            registered = registry.get(ROLES[role], s.plugin)
        except UnknownNameError as exc:
            raise RunConfigError(str(exc)) from None
        options = dict(s.options)
        if role == "pipeline" and spec.num_records is not None:
            options.setdefault("num_records", spec.num_records)
        model = registered.obj.Options
        try:
            return Step(role, registered, model.model_validate(options))
        except ValidationError as exc:
            fields = ", ".join(model.model_fields) or "none"
            raise RunConfigError(
                f"{role} {s.plugin!r}: {_explain(exc)}. Valid options: {fields}"
            ) from None

    return ResolvedRun(
        spec,
        step("source", spec.source) if spec.source else None,
        step("pipeline", spec.pipeline),
        [step("judge", s) for s in spec.judges],
        [],
    )


# --------------------------------------------------------------------------------------------
# Preparing: seed, builder, judges — what the engine's run_pipeline does before create().


@dataclass
class Prepared:
    """A pipeline's assembled builder, with the run context it was built in.

    Holds a ModelSession (servers it started stop on `close()`) and, when no run dir was given,
    a temporary one that `close()` removes. Use it as a context manager.
    """

    resolved: ResolvedRun
    run: RunContext
    builder: DataDesignerConfigBuilder
    seed: pd.DataFrame | None
    seed_origin: str | None  # e.g. "source files" or "example seed of pipeline x"
    origins: dict[str, str] = field(default_factory=dict)  # column -> "pipeline" / "judge j"
    _owned_dir: Path | None = None

    @property
    def pipeline(self) -> Step:
        assert self.resolved.pipeline is not None
        return self.resolved.pipeline

    @property
    def num_records(self) -> int:
        """Rows a run would request: `pipeline.num_records`, else one per seed row, else 10."""
        requested = getattr(self.pipeline.options, "num_records", None)
        if requested:
            return int(requested)
        return len(self.seed) if self.seed is not None and len(self.seed) else DEFAULT_NUM_RECORDS

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

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    from bashgym.designer import prepare_environment

    if resolved.pipeline is None:
        raise InputError("nothing to prepare: the run names no pipeline")
    prepare_environment(settings)  # before DataDesigner's first import, as for a run
    owned = None
    if run_dir is None:
        owned = run_dir = Path(tempfile.mkdtemp(prefix=f"bashgym-{resolved.pipeline.name}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    models = ModelSession(settings, host.registry, serve=serve)
    run = RunContext(run_dir=run_dir, settings=settings, seed=resolved.spec.seed, models=models)
    try:
        seed, origin = _read_seed(resolved, run, host, console)
        builder, origins = assemble(resolved.pipeline, resolved.judges, run, seed)
    except BaseException:
        models.close()
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        raise
    return Prepared(resolved, run, builder, seed, origin, origins, owned)


def _read_seed(
    resolved: ResolvedRun, run: RunContext, host: PluginHost, console: Console | None
) -> tuple[pd.DataFrame | None, str | None]:
    from rich.console import Console
    from rich.progress import Progress

    from bashgym.engine import read_source

    pipeline = resolved.pipeline
    assert pipeline is not None
    if resolved.source is not None:
        with Progress(console=console or Console(stderr=True), transient=True) as progress:
            seed = read_source(resolved.source, run, host, progress)
        if len(seed) == 0:
            raise InputError(f"source {resolved.source.name!r} produced no rows")
        return seed, f"source {resolved.source.name}"
    seed = pipeline.obj.example_seed(pipeline.options)
    if seed is not None:
        return seed, f"example seed of pipeline {pipeline.name}"
    if getattr(pipeline.obj, "needs_seed", False):
        registry = run.models.registry if run.models else None
        sources = ", ".join(registry.names("sources")) if registry else ""
        raise InputError(
            f"pipeline {pipeline.name!r} needs seed rows and ships no example seed: "
            f"pass -s SOURCE (sources: {sources or 'none'})"
        )
    return None, None


def assemble(
    pipeline: Step, judges: list[Step], run: RunContext, seed: pd.DataFrame | None
) -> tuple[DataDesignerConfigBuilder, dict[str, str]]:
    """The builder a run would generate from, and which step added each column."""
    import data_designer.config as dd

    from bashgym.designer import seed_frame

    builder = _call(f"pipeline {pipeline.name!r}", pipeline.obj.build, pipeline.options, run, seed)
    origins = {c.name: "pipeline" for c in builder.get_column_configs()}
    for judge in judges:
        _call(f"judge {judge.name!r}", judge.obj.configure, builder, judge.options, run)
        for column in builder.get_column_configs():
            origins.setdefault(column.name, f"judge {judge.name}")
    if seed is not None and builder.get_seed_config() is None:
        builder.with_seed_dataset(seed_frame(seed), sampling_strategy=dd.SamplingStrategy.ORDERED)
    return builder, origins


def _call(who: str, fn: Any, *args: Any) -> Any:
    """Run a plugin's build/configure; its failure becomes one line naming the plugin."""
    try:
        return fn(*args)
    except InputError:
        raise
    except Exception as exc:  # a plugin failure of any kind: named, cause chained
        raise InputError(f"{who} failed to build its config: {one_line(exc)}") from exc


def one_line(exc: BaseException) -> str:
    """`Type: message` on one line: DataDesigner's boxed multi-line errors condensed; a pydantic
    error names its model, the field and the message (its first line only counts the errors)."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
        )
        return f"invalid {exc.title}: {problems}"
    text = condense(str(exc).splitlines())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


MAX_MESSAGE = 300


def condense(lines: list[str]) -> str:
    """Lines of a DataDesigner message as one line, without its box rules, bars and emoji."""
    pieces = [ln.strip().strip("|-🛑⚠️🔔 ").strip() for ln in lines]
    text = re.sub(r"\s+", " ", " ".join(p for p in pieces if p)).strip()
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


# --------------------------------------------------------------------------------------------
# Validating: DataDesigner's compile step, plus the model wiring it only checks at generation.


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # DataDesigner column_type, e.g. "sampler", "llm-text", "seed-dataset"
    origin: str  # "seed", "pipeline" or "judge <name>"
    drop: bool = False


@dataclass
class Validation:
    columns: list[Column]
    problems: list[str]
    warnings: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def config_columns(prepared: Prepared) -> list[Column]:
    """Every column of the config: seed columns (when the seed is a frame; a file or agent
    rollout source names its columns only when DataDesigner reads it), then generated ones."""
    seed = _frame_seed(prepared.builder)
    seed_columns = [] if seed is None else [str(c) for c in seed.columns]
    columns = [Column(name, "seed-dataset", "seed") for name in seed_columns]
    for config in prepared.builder.get_column_configs():
        columns.append(
            Column(
                config.name,
                str(getattr(config.column_type, "value", config.column_type)),
                prepared.origins.get(config.name, "pipeline"),
                bool(getattr(config, "drop", False)),
            )
        )
    return columns


def _frame_seed(builder: DataDesignerConfigBuilder) -> Any:
    """The DataFrame of a DataFrame seed source, else None."""
    import data_designer.config as dd

    seed_config = builder.get_seed_config()
    if seed_config is not None and isinstance(seed_config.source, dd.DataFrameSeedSource):
        return seed_config.source.df
    return None


def used_aliases(builder: DataDesignerConfigBuilder) -> dict[str, list[str]]:
    """Model alias -> the columns that call it."""
    used: dict[str, list[str]] = {}
    for column in builder.get_column_configs():
        for alias in column.get_model_aliases():
            used.setdefault(alias, []).append(column.name)
    return used


def validate(prepared: Prepared) -> Validation:
    """Compile the config with DataDesigner (no model is called) and check its model wiring.

    Problems name the column at fault, e.g. "Expression column 'e' references missing column
    'x'." DataDesigner prints its own violation panels to stdout and raises a generic error;
    the violations are recomputed here with its own validator so each becomes one line.
    """
    from data_designer.config.errors import InvalidConfigError
    from data_designer.errors import DataDesignerError

    builder = prepared.builder
    problems, warnings = _violations(prepared)
    problems += _model_problems(prepared)
    designer = _designer(prepared, providers=[])
    try:
        with _quiet(prepared.run.run_dir):
            designer.validate(builder)
    except InvalidConfigError as exc:
        if not problems:
            problems.append(one_line(exc))
    except (DataDesignerError, ValueError) as exc:
        problems.append(one_line(exc))
    return Validation(config_columns(prepared), problems, warnings)


def _violations(prepared: Prepared) -> tuple[list[str], list[str]]:
    """DataDesigner's column checks as (errors, warnings), one line each."""
    from data_designer.config.column_configs import SeedDatasetColumnConfig
    from data_designer.engine.validation import ViolationLevel, validate_data_designer_config

    if prepared.builder.get_seed_config() is not None and _frame_seed(prepared.builder) is None:
        return [], []  # seed columns unknown until DataDesigner reads the source: it decides
    try:
        config = prepared.builder.build()
    except Exception as exc:  # noqa: BLE001 -- a builder that cannot build is the problem itself
        return [one_line(exc)], []
    seed = _frame_seed(prepared.builder)
    columns = list(config.columns)
    if seed is not None:
        columns += [SeedDatasetColumnConfig(name=str(c)) for c in seed.columns]
    references = {c.name for c in columns} | {s for c in columns for s in c.side_effect_columns}
    violations = validate_data_designer_config(
        columns=columns,
        processor_configs=config.processors or [],
        allowed_references=sorted(references),
    )
    errors, warnings = [], []
    for v in violations:
        text = v.message.strip()
        if v.column and repr(v.column) not in text and v.column not in text:
            text = f"column {v.column!r}: {text}"
        (errors if v.level == ViolationLevel.ERROR else warnings).append(text)
    return errors, warnings


def _model_problems(prepared: Prepared) -> list[str]:
    """Aliases a column calls that the config does not define, or that BashGym cannot reach."""
    from bashgym.models import ModelError

    builder, models = prepared.builder, prepared.run.models
    defined = {mc.alias: mc for mc in builder.model_configs}
    problems = []
    for alias, columns in used_aliases(builder).items():
        where = f"column(s) {', '.join(repr(c) for c in columns)}"
        config = defined.get(alias)
        if config is None:
            problems.append(f"{where} call model alias {alias!r}, which the config does not define")
            continue
        if models is None:
            continue
        if config.provider not in models.settings.models and config.provider != alias:
            problems.append(
                f"model alias {alias!r} uses provider {config.provider!r}, which is not a BashGym "
                "model alias (see `bashgym models`)"
            )
            continue
        try:
            models.resolve(config.provider).require_key()
        except ModelError as exc:
            problems.append(str(exc))
    return problems


def _designer(prepared: Prepared, providers: list[ModelProvider]) -> Any:
    from bashgym.designer import make_designer

    return make_designer(prepared.run.run_dir, providers, prepared.run.settings)


@contextlib.contextmanager
def _quiet(run_dir: Path) -> Any:
    """DataDesigner's logs into the run's log file; its stdout panels there too, not on screen
    (they would corrupt `--json` output)."""
    from bashgym.designer import _route_logs

    log_file = run_dir / "logs" / "datadesigner.log"
    handler = _route_logs(log_file)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield log_file
    finally:
        import logging

        logging.getLogger("data_designer").removeHandler(handler)
        handler.close()
        if buffer.getvalue().strip():
            with log_file.open("a") as fh:
                fh.write(buffer.getvalue())


# --------------------------------------------------------------------------------------------
# Previewing: DataDesigner's in-memory preview, then the pipeline's finalize.


@dataclass
class Preview:
    dataset: pd.DataFrame  # finalized rows, in the pipeline's output format
    requested: int
    generated: int  # rows DataDesigner returned, before finalize
    dropped: dict[str, int]  # reason -> rows, from generation and finalize


def preview(prepared: Prepared, n: int) -> Preview:
    """Generate `n` rows with DataDesigner's `preview()` against the run's model providers, then
    `finalize` them. Every requested row that does not come out is counted under the reason a
    run would give it (`bashgym.generation.account`): cells that failed for good, rows a
    processor dropped, rows `finalize` dropped, and any remainder.

    A preview whose every row was dropped for a countable reason (unparseable answers, filters)
    is a result with zero rows, as in a run; any other DataDesigner failure is an InputError
    quoting the log's warnings, and the run dir is kept so the log it names stays readable.
    """
    from data_designer.errors import DataDesignerError

    from bashgym.designer import Generation, _all_rows_dropped, task_failures
    from bashgym.drops import read_drops
    from bashgym.generation import account
    from bashgym.scrub import scrub_dataset

    run, step = prepared.run, prepared.pipeline
    assert run.models is not None
    providers = run.models.providers_for(prepared.builder.model_configs)
    designer = _designer(prepared, providers)
    try:
        with _quiet(run.run_dir) as log_file:
            results = designer.preview(prepared.builder, num_records=n)
    except DataDesignerError as exc:
        generation = _all_rows_dropped(designer, n, 0)
        if generation is None:
            prepared.keep_dir()
            details = _log_problems(log_file) if "warnings above" in str(exc) else ""
            raise InputError(
                f"preview of pipeline {step.name!r} failed: {one_line(exc)}{details} "
                f"(DataDesigner's log: {log_file})"
            ) from exc
    else:
        artifact_dir = Path(designer.last_builder.artifact_storage.base_dataset_path)
        generation = Generation(
            dataset=results.dataset.reset_index(drop=True),
            requested=n,
            artifact_dir=artifact_dir,
            failures=task_failures(results.task_traces or []),
            dropped=read_drops(artifact_dir),
        )
    account(run, generation)
    dataset: pd.DataFrame = generation.dataset
    generated = len(dataset)
    if generated:
        dataset = step.obj.finalize(dataset, step.options, run)
        dataset, _ = scrub_dataset(dataset, run.settings.scrub)  # it is about to be printed
    return Preview(dataset.reset_index(drop=True), n, generated, dict(run.dropped))


_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (\w+) \S+?: ?(.*)$")
_ROW_TAG = re.compile(r"\[rg=\d+, row=\d+\]")


def _log_problems(log_file: Path, most: int = 3) -> str:
    """`: warning; warning` from DataDesigner's log: its exceptions say "see the warnings
    above", which went to the log, not the terminal. Per-row repeats are counted once."""
    if not log_file.is_file():
        return ""
    records: list[tuple[str, list[str]]] = []
    for line in log_file.read_text(errors="replace").splitlines():
        match = _LOG_RECORD.match(line)
        if match:
            records.append((match.group(1), [match.group(2)]))
        elif records:
            records[-1][1].append(line)  # a multi-line record continues
    seen: list[str] = []
    for level, lines in records:
        text = condense([_ROW_TAG.sub("", ln) for ln in lines])
        if level in ("WARNING", "ERROR") and text and text not in seen:
            seen.append(text)
    return (": " + "; ".join(seen[:most])) if seen else ""


# --------------------------------------------------------------------------------------------
# Exporting: a config file the `data-designer` CLI runs as is.


@dataclass
class Export:
    config: Path
    seed: Path | None
    home: Path  # a DATA_DESIGNER_HOME holding model_providers.yaml
    command: str  # how to run it with the data-designer CLI
    notes: list[str]


def export(prepared: Prepared, path: Path) -> Export:
    """Write the builder as YAML or JSON (by suffix) for `data-designer validate|preview|create`.

    The `data-designer` CLI reads providers only from `$DATA_DESIGNER_HOME/model_providers.yaml`,
    so the providers the config needs go into a folder `<stem>.dd-home/` next to it. A DataFrame
    seed is written as `<stem>.seed.parquet` and referenced by absolute path (DataDesigner
    resolves relative seed paths from the working directory, not the config's). Model configs
    no column uses (DataDesigner's built-in defaults) are left out. Columns that run Python
    from the pipeline cannot be written: an InputError names them. Modifies the builder.
    """
    path = Path(path)
    if path.suffix.lower() not in CONFIG_SUFFIXES:
        raise InputError(f"export to {str(path)!r}: use a .yaml, .yml or .json file name")
    _check_serializable(prepared.builder)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _quiet(prepared.run.run_dir):  # DataDesigner warns as model configs are removed
        seed_path = _write_config(prepared.builder, path)
    home = path.parent / f"{path.stem}.dd-home"
    providers, notes = _export_providers(prepared, prepared.builder.model_configs)
    _write_providers(home, providers)
    return Export(path, seed_path, home, _command(path, home, prepared), notes)


def _write_config(builder: DataDesignerConfigBuilder, path: Path) -> Path | None:
    """Seed to parquet, unused model configs out, config written and loaded back."""
    import data_designer.config as dd

    seed_path = None
    seed_df = _frame_seed(builder)
    if seed_df is not None:
        seed_path = (path.parent / f"{path.stem}.seed.parquet").resolve()
        try:
            seed_df.to_parquet(seed_path, index=False)
        except (ValueError, TypeError, ImportError) as exc:
            raise InputError(
                f"the seed rows cannot be written as parquet: {one_line(exc)}"
            ) from exc
        old = builder.get_seed_config()
        builder.with_seed_dataset(
            dd.LocalFileSeedSource(path=str(seed_path)),
            sampling_strategy=old.sampling_strategy,
            selection_strategy=old.selection_strategy,
        )
    used = used_aliases(builder)
    for config in list(builder.model_configs):
        if config.alias not in used:
            builder.delete_model_config(config.alias)
    try:
        builder.write_config(path)
    except Exception as exc:  # DataDesigner raises several types here
        raise InputError(f"cannot write {str(path)!r}: {one_line(exc)}") from exc
    _check_loads_back(path)
    return seed_path


UNSERIALIZABLE = {"custom": "a custom column (Python generator function)"}


def _check_serializable(builder: DataDesignerConfigBuilder) -> None:
    for column in builder.get_column_configs():
        kind = str(getattr(column.column_type, "value", column.column_type))
        why = UNSERIALIZABLE.get(kind)
        validator_type = getattr(column, "validator_type", None)
        validator = str(getattr(validator_type, "value", validator_type))
        if validator == "local_callable":
            why = "a local_callable validation column (Python function)"
        if why:
            raise InputError(
                f"column {column.name!r} is {why}: a config file cannot carry Python code, so the "
                "data-designer CLI cannot run this pipeline; use `bashgym run` instead"
            )


def _check_loads_back(path: Path) -> None:
    """The written file must load in DataDesigner, else the export is useless: say why."""
    import data_designer.config as dd

    try:
        dd.DataDesignerConfigBuilder.from_config(path)
    except Exception as exc:  # pydantic or DataDesigner errors alike
        path.unlink(missing_ok=True)
        raise InputError(
            f"the exported config does not load back in DataDesigner (a plugin column or "
            f"processor that only works in Python?): {one_line(exc)}"
        ) from exc


def _export_providers(
    prepared: Prepared, model_configs: list[ModelConfig]
) -> tuple[list[ModelProvider], list[str]]:
    """One provider per BashGym alias the config uses; the key stays an env var NAME."""
    import os

    import data_designer.config as dd

    from bashgym.designer import PLACEHOLDER_PROVIDER

    models = prepared.run.models
    assert models is not None
    providers: dict[str, ModelProvider] = {}
    notes = []
    for config in model_configs:
        name = config.provider
        if name in providers or (name not in models.settings.models and name != config.alias):
            continue
        resolved = models.resolve(name)
        providers[name] = dd.ModelProvider(
            name=resolved.provider_name,
            endpoint=resolved.endpoint,
            provider_type=resolved.spec.dd_type,
            api_key=resolved.api_key_env,
        )
        runtime = PROVIDERS[resolved.provider].runtime
        if resolved.endpoint == NOT_SERVED_ENDPOINT and runtime:
            notes.append(
                f"model alias {name!r} is served by BashGym's {runtime!r} runtime only while "
                f"bashgym runs: start it (e.g. `bashgym serve`) and put its URL as the endpoint "
                f"of provider {name!r} in model_providers.yaml"
            )
        if resolved.api_key_env and not os.environ.get(resolved.api_key_env):
            notes.append(f"set {resolved.api_key_env} (the key of alias {name!r}) before running")
    if not providers:  # DataDesigner wants one provider even when no column calls a model
        providers["placeholder"] = dd.ModelProvider(**PLACEHOLDER_PROVIDER)
    return list(providers.values()), notes


def _write_providers(home: Path, providers: list[ModelProvider]) -> None:
    """`model_providers.yaml` written the way the data-designer CLI's ProviderRepository saves
    it (`data_designer.cli.repositories.provider_repository`), so its loader reads it back."""
    from data_designer.config.utils.constants import MODEL_PROVIDERS_FILE_NAME
    from data_designer.config.utils.io_helpers import save_config_file

    doc = {"providers": [p.model_dump(mode="json", exclude_none=True) for p in providers]}
    save_config_file(home / MODEL_PROVIDERS_FILE_NAME, doc)


def _command(path: Path, home: Path, prepared: Prepared) -> str:
    telemetry = "true" if prepared.run.settings.telemetry else "false"
    return (
        f"DATA_DESIGNER_HOME={shlex.quote(str(home.resolve()))} "
        f"NEMO_TELEMETRY_ENABLED={telemetry} "
        f"data-designer create {shlex.quote(str(path))} -n {prepared.num_records}"
    )


# --------------------------------------------------------------------------------------------
# Listing: every pipeline built with its default options, without a model server.


@dataclass
class PipelineInfo:
    name: str
    plugin: str
    description: str
    output_format: str
    needs_seed: bool
    example_seed: bool
    seed_columns: list[str]
    columns: list[Column]
    error: str | None = None


def list_pipelines(host: PluginHost, settings: Settings) -> list[PipelineInfo]:
    """Each registered pipeline with the columns its default options build; a pipeline that
    fails to build is listed with its error, never raised."""
    from bashgym.designer import prepare_environment

    prepare_environment(settings)
    infos = []
    with (
        tempfile.TemporaryDirectory(prefix="bashgym-list-") as tmp,
        ModelSession(settings, host.registry, serve=False) as models,
    ):
        run = RunContext(run_dir=Path(tmp), settings=settings, models=models)
        for name in host.registry.names("pipelines"):
            infos.append(_describe(host.registry.get("pipelines", name), run))
    return infos


def _describe(registered: Registered, run: RunContext) -> PipelineInfo:
    obj = registered.obj
    info = PipelineInfo(
        name=registered.name,
        plugin=registered.plugin,
        description=obj.summary(),
        output_format=str(getattr(obj, "output_format", "rows")),
        needs_seed=bool(getattr(obj, "needs_seed", False)),
        example_seed=False,
        seed_columns=[],
        columns=[],
    )
    try:
        options = obj.Options()
        seed = obj.example_seed(options)
        info.example_seed = seed is not None
        info.seed_columns = [] if seed is None else [str(c) for c in seed.columns]
        step = Step("pipeline", registered, options)
        builder, origins = assemble(step, [], run, seed)
    except ValidationError as exc:
        from bashgym.runspec import _explain

        info.error = f"needs options: {_explain(exc)}"
        return info
    except Exception as exc:  # noqa: BLE001 -- one broken pipeline never breaks the listing
        cause = exc.__cause__ if isinstance(exc, InputError) else exc  # the plugin's own error
        info.error = one_line(cause) if cause is not None else str(exc)
        if info.needs_seed and not info.example_seed:
            info.error = f"needs seed rows to build (it ships no example seed): {info.error}"
        return info
    info.columns = [
        Column(
            c.name,
            str(getattr(c.column_type, "value", c.column_type)),
            origins.get(c.name, "pipeline"),
            bool(getattr(c, "drop", False)),
        )
        for c in builder.get_column_configs()
    ]
    return info
