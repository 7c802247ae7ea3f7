"""`bashgym pipeline export`: a config file the `data-designer` CLI runs as is.

A pipeline's config lives in Python; exporting it lets it be run, shared or inspected without
BashGym. The file alone would not run: the `data-designer` CLI reads providers only from
`$DATA_DESIGNER_HOME/model_providers.yaml`, and a DataFrame seed exists only in memory. So the
export writes three things side by side (config, seed parquet, providers home), refuses
columns that carry Python code, rewrites BashGym's DataDesigner plugin types as built-ins
(portable.py: what cannot travel is a note), and checks that the written file loads back.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import data_designer.config as dd
from bashgym_cli.oserrors import os_problem
from bashgym_designer.designer import PLACEHOLDER_PROVIDER
from bashgym_designer.models import model_provider

from bashgym.contracts import InputError
from bashgym_commands_pipeline.columns import enum_text, frame_seed, used_aliases
from bashgym_commands_pipeline.messages import one_line, quiet
from bashgym_commands_pipeline.portable import make_portable
from bashgym_commands_pipeline.preparing import Prepared

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
UNSERIALIZABLE = {"custom": "a custom column (Python generator function)"}


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
    if path.is_dir():
        raise InputError(f"export to {str(path)!r}: it is a folder; name a file in it")
    _check_serializable(prepared.builder)
    portable = make_portable(prepared.builder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder should be, no permission, ...
        raise InputError(
            f"export to {str(path)!r}: cannot make its folder: {os_problem(exc)}"
        ) from None
    with quiet(prepared.run):  # DataDesigner warns as model configs are removed
        seed_path = _write_config(prepared.builder, path)
    home = path.parent / f"{path.stem}.dd-home"
    providers, notes = _export_providers(prepared, prepared.builder.model_configs)
    notes = [*portable, *notes, *_plugins_needed(prepared.builder)]
    try:
        _write_providers(home, providers)
    except OSError as exc:
        raise InputError(f"cannot write {str(home)!r}: {os_problem(exc)}") from None
    return Export(path, seed_path, home, _command(path, home, prepared), notes)


def _write_config(builder: dd.DataDesignerConfigBuilder, path: Path) -> Path | None:
    """Seed to parquet, unused model configs out, config written and loaded back."""
    seed_path = None
    seed_df = frame_seed(builder)
    if seed_df is not None:
        seed_path = (path.parent / f"{path.stem}.seed.parquet").resolve()
        try:
            seed_df.to_parquet(seed_path, index=False)
        except OSError as exc:
            raise InputError(f"cannot write {str(seed_path)!r}: {os_problem(exc)}") from None
        except (ValueError, TypeError, ImportError) as exc:
            raise InputError(
                f"the seed rows cannot be written as parquet: {one_line(exc)}"
            ) from exc
    else:
        seed_path = _copy_seed_file(builder, path)
    if seed_path is not None:
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
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {os_problem(exc)}") from None
    except Exception as exc:  # DataDesigner raises several types here
        raise InputError(f"cannot write {str(path)!r}: {one_line(exc)}") from exc
    _check_loads_back(path)
    return seed_path


def _copy_seed_file(builder: dd.DataDesignerConfigBuilder, path: Path) -> Path | None:
    """A seed file the pipeline wrote itself (e.g. under a temporary run dir that is gone once
    the export returns) is copied beside the config, so the export stands on its own."""
    seed_config = builder.get_seed_config()
    source = seed_config.source if seed_config is not None else None
    if not isinstance(source, dd.LocalFileSeedSource) or not Path(source.path).is_file():
        return None  # no seed, a glob, or another kind of source: left as it is
    target = (path.parent / f"{path.stem}.seed{Path(source.path).suffix}").resolve()
    try:
        shutil.copyfile(source.path, target)
    except OSError as exc:
        raise InputError(f"cannot write {str(target)!r}: {os_problem(exc)}") from None
    return target


def _check_serializable(builder: dd.DataDesignerConfigBuilder) -> None:
    for column in builder.get_column_configs():
        why = UNSERIALIZABLE.get(enum_text(column.column_type))
        if enum_text(getattr(column, "validator_type", None)) == "local_callable":
            why = "a local_callable validation column (Python function)"
        if why:
            raise InputError(
                f"column {column.name!r} is {why}: a config file cannot carry Python code, so the "
                "data-designer CLI cannot run this pipeline; use `bashgym run` instead"
            )


def _check_loads_back(path: Path) -> None:
    """The written file must load in DataDesigner, else the export is useless: say why."""
    try:
        dd.DataDesignerConfigBuilder.from_config(path)
    except Exception as exc:  # pydantic or DataDesigner errors alike
        path.unlink(missing_ok=True)
        raise InputError(
            f"the exported config does not load back in DataDesigner (a plugin column or "
            f"processor that only works in Python?): {one_line(exc)}"
        ) from exc


def _plugins_needed(builder: dd.DataDesignerConfigBuilder) -> list[str]:
    """What the plain `data-designer` CLI must have installed to run the config: the
    distributions whose `data_designer.plugins` entry points define its column, processor or
    seed types. An install hint names only a distribution installed from a package index: one
    installed from a local folder (a workspace, an editable checkout) is not on PyPI to install,
    so that is said instead of a `pip install` that would fail."""
    used = {enum_text(getattr(c, "column_type", "")) for c in builder.get_column_configs()}
    used |= {enum_text(getattr(p, "processor_type", "")) for p in builder.get_processor_configs()}
    seed = builder.get_seed_config()
    if seed is not None:
        used.add(enum_text(getattr(seed.source, "seed_type", "")))
    needed = {
        ep.dist.name: ep.dist
        for ep in metadata.entry_points(group="data_designer.plugins")
        if ep.name in used and ep.dist is not None
    }
    local = sorted(name for name, dist in needed.items() if _from_local_folder(dist))
    indexed = sorted(name for name in needed if name not in local)
    notes = []
    if indexed:
        notes.append(
            f"this config uses DataDesigner plugins from {', '.join(indexed)}: install them "
            f"where the data-designer CLI runs (pip install {' '.join(indexed)})"
        )
    if local:
        notes.append(
            f"this config uses DataDesigner plugin types from {', '.join(local)}, installed here "
            "from a local folder, not from a package index: the data-designer CLI runs it only "
            "where that folder is installed too"
        )
    return notes


def _from_local_folder(dist: metadata.Distribution) -> bool:
    """PEP 610: a `direct_url.json` naming a local directory or file means the distribution
    came from a path, not from an index (an index install writes none)."""
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        url = json.loads(text).get("url", "")
    except ValueError:
        return False
    return str(url).startswith("file:")


def _export_providers(
    prepared: Prepared, model_configs: list[dd.ModelConfig]
) -> tuple[list[dd.ModelProvider], list[str]]:
    """One provider per BashGym alias the config uses; the key stays an env var NAME."""
    models = prepared.run.models
    assert models is not None
    providers: dict[str, dd.ModelProvider] = {}
    notes = []
    for config in model_configs:
        name = config.provider
        if name in providers or (name not in models.settings.models and name != config.alias):
            continue
        model = models.resolve(name)
        providers[name] = model_provider(model, check_key=False)  # a note says to set it
        if model.served:  # its runtime is named after its provider (e.g. embedded)
            runtime = model.provider
            notes.append(
                f"model alias {name!r} is served by BashGym's {runtime!r} runtime only while "
                f"bashgym runs: start it (e.g. `bashgym serve`) and put its URL as the endpoint "
                f"of provider {name!r} in model_providers.yaml"
            )
        if model.api_key_env and not os.environ.get(model.api_key_env):
            notes.append(f"set {model.api_key_env} (the key of alias {name!r}) before running")
    if not providers:  # DataDesigner wants one provider even when no column calls a model
        providers["placeholder"] = dd.ModelProvider(**PLACEHOLDER_PROVIDER)
    return list(providers.values()), notes


def _write_providers(home: Path, providers: list[dd.ModelProvider]) -> None:
    """`model_providers.yaml` written the way the data-designer CLI's ProviderRepository saves
    it (`data_designer.cli.repositories.provider_repository`), so its loader reads it back."""
    # ~45 ms (yaml, measured): only an export writes one; this module loads with every command
    # here, not at the top: DataDesigner's constants read DATA_DESIGNER_HOME when imported, and
    # this module loads with the plugins, before prepare_environment points it at BashGym's cache
    from data_designer.config.utils.constants import MODEL_PROVIDERS_FILE_NAME
    from data_designer.config.utils.io_helpers import save_config_file

    doc = {"providers": [p.model_dump(mode="json", exclude_none=True) for p in providers]}
    save_config_file(home / MODEL_PROVIDERS_FILE_NAME, doc)


def _command(path: Path, home: Path, prepared: Prepared) -> str:
    """The shell line that runs the export with the data-designer CLI, telemetry as BashGym's."""
    telemetry = "true" if prepared.run.settings.telemetry else "false"
    return (
        f"DATA_DESIGNER_HOME={shlex.quote(str(home.resolve()))} "
        f"NEMO_TELEMETRY_ENABLED={telemetry} "
        f"data-designer create {shlex.quote(str(path))} -n {prepared.num_records}"
    )
