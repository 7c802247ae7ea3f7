"""DataDesigner's working files under RUN_DIR/datadesigner hold no secret (README "Secret
scrubbing": secrets never reach any file in a run dir).

The engine scrubs every row before the sinks, but DataDesigner writes its own files first,
inside `create()`: each batch as parquet (a model's answer or a sampler expression's output
raw), `builder_config.json` (the run file's prompts, judges' names, keep rules and reasons
raw), and the processors it builds from the config write theirs (the `bashgym-filter`
processor's `bashgym-drops/filter_<name>.jsonl`, whose file name is the judge's name). 0.9
offers no option for any of it, so four of its methods are wrapped, each at the point where a
value is about to be written, so that no raw value is ever on disk (not even for a moment, nor
after a killed run):

- `ArtifactStorage.write_parquet_file`, the one method every parquet file goes through
  (batches and their partial copies, the rewrite after its after-generation processors,
  dropped columns, processors' outputs): the frame is written as `run.scrub_frame` returns it.
  DataDesigner's rows in memory stay as generated, so later columns' prompts are unchanged;
  what it reads back from disk (after-generation processors such as the filter, the final
  dataset) is scrubbed, as the sinks' rows are. Each secret is counted once, here: the
  engine's scrub before the sinks then finds it gone.
- `DatasetBuilder._write_builder_config`: the JSON is written as `run.redact` returns it.
  Resuming is unaffected: DataDesigner compares the config hash in metadata.json, computed
  from the config in memory.
- `DatasetBuilder._initialize_processors`: each processor is built from a copy of its config
  whose `name` (and a `bashgym-filter`'s reasons) are redacted, since they become file names
  and drop records. Keep rules stay as written: they are code, and the rows they read are
  already scrubbed.
- `DatasetBuilder.process_preview`: a preview's rows stay in memory, past the parquet writer,
  so its processors (a filter writes each row it drops to `bashgym-drops/`) are handed them as
  `run.scrub_frame` returns them, as a run's processors read theirs back scrubbed.

The wrappers are installed once per process and act only inside `scrubbed_artifacts(run)`, for
the DataDesigner writing under that run's folder (found by its artifact path, so rounds, shards
in this process and DataDesigner used outside a run never mix). Should DataDesigner change
these methods, nothing is installed and the tests say so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bashgym.contracts import RunContext

ARTIFACT_FOLDER = "datadesigner"  # bashgym_designer.designer.make_designer's artifact_path

_lock = threading.Lock()
_installed = False
_runs: dict[Path, RunContext] = {}  # artifact path -> the run whose files are written there


@contextmanager
def scrubbed_artifacts(run: RunContext) -> Iterator[None]:
    """The DataDesigner files written under `run`'s folder inside this block are scrubbed
    (nothing to do when the run's scrubbing is off)."""
    if run.scrubbing is None or not run.scrubbing.enabled:
        yield
        return
    install()
    key = _key(run.run_dir / ARTIFACT_FOLDER)
    with _lock:
        _runs[key] = run
    try:
        yield
    finally:
        with _lock:
            _runs.pop(key, None)


def _key(path: Any) -> Path:
    return Path(path).absolute()


def run_for(artifact_path: Any) -> RunContext | None:
    """The run whose DataDesigner writes under `artifact_path`, if one is in a block."""
    return _runs.get(_key(artifact_path)) if _runs else None


def install() -> None:
    """Wrap DataDesigner's four writers (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        try:  # DataDesigner's engine: imported after prepare_environment (the runner's)
            from data_designer.engine.dataset_builders import dataset_builder
            from data_designer.engine.storage.artifact_storage import ArtifactStorage
        except ImportError:
            return
        builder = dataset_builder.DatasetBuilder
        ArtifactStorage.write_parquet_file = _scrubbing_parquet(ArtifactStorage.write_parquet_file)
        builder._write_builder_config = _redacted_config(dataset_builder)
        builder._initialize_processors = _redacted_processors(builder._initialize_processors)
        builder.process_preview = _scrubbed_preview(builder.process_preview)


def _scrubbing_parquet(original: Callable[..., Path]) -> Callable[..., Path]:
    def write_parquet_file(
        self: Any, parquet_file_name: str, dataframe: Any, batch_stage: Any,
        subfolder: str | None = None,
    ) -> Path:  # fmt: skip
        run = run_for(self.artifact_path)
        if run is not None:
            dataframe = run.scrub_frame(dataframe)
        return original(self, parquet_file_name, dataframe, batch_stage, subfolder=subfolder)

    return write_parquet_file


def _redacted_config(module: Any) -> Callable[[Any], None]:
    """`_write_builder_config` writing the JSON redacted; DataDesigner's own for other runs."""
    original = module.DatasetBuilder._write_builder_config

    def _write_builder_config(self: Any) -> None:
        storage = self.artifact_storage
        run = run_for(storage.artifact_path)
        if run is None:
            return original(self)  # type: ignore[no-any-return]
        storage.mkdir_if_needed(storage.base_dataset_path)
        text = module.BuilderConfig(data_designer=self._data_designer_config).to_json()
        path = Path(storage.base_dataset_path) / module.SDG_CONFIG_FILENAME
        path.write_text(run.redact(text), encoding="utf-8")
        return None

    return _write_builder_config


def _redacted_processors(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    def _initialize_processors(self: Any, processor_configs: list[Any]) -> list[Any]:
        run = run_for(self.artifact_storage.artifact_path)
        if run is not None:
            processor_configs = [redacted_processor(c, run.redact) for c in processor_configs]
        return original(self, processor_configs)

    return _initialize_processors


def _scrubbed_preview(original: Callable[..., Any]) -> Callable[..., Any]:
    def process_preview(self: Any, dataset: Any) -> Any:
        run = run_for(self.artifact_storage.artifact_path)
        return original(self, run.scrub_frame(dataset) if run is not None else dataset)

    return process_preview


def redacted_processor(config: Any, redact: Callable[[str], str]) -> Any:
    """`config` with its name and, for a `bashgym-filter`, its rules' reasons redacted (the
    same object when nothing changed)."""
    from bashgym_designer.filters import FilterProcessorConfig

    update: dict[str, Any] = {}
    name = redact(config.name)
    if name != config.name:
        update["name"] = name
    if isinstance(config, FilterProcessorConfig):
        rules = [r.model_copy(update={"reason": redact(r.reason)}) for r in config.rules]
        if any(new.reason != old.reason for new, old in zip(rules, config.rules, strict=True)):
            update["rules"] = rules
    return config.model_copy(update=update) if update else config
