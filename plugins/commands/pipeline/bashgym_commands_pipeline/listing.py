"""`bashgym pipeline list`: every pipeline with the columns its default options build.

A user choosing a pipeline wants to see what each one produces, not only its name; building
each with its default options (and example seed) shows its columns without a model server or
a run. One pipeline that fails to build is listed with its error, never breaks the listing.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym_designer.designer import prepare_environment
from bashgym_designer.rounds import assemble
from pydantic import ValidationError

from bashgym.contracts import InputError, RunContext, open_models
from bashgym.runspec import Step, explain_validation
from bashgym_commands_pipeline.columns import Column, generated_columns
from bashgym_commands_pipeline.messages import one_line

if TYPE_CHECKING:
    from bashgym.plugins import PluginHost
    from bashgym.registry import Registered
    from bashgym.settings import Settings


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
    # what to set before the columns can be listed, in words (`set pipeline.csv=PATH to a CSV
    # file`); with it, `error` is why its default options did not build ("needs options: ...")
    needs: str | None = None


def list_pipelines(host: PluginHost, settings: Settings) -> list[PipelineInfo]:
    """Each registered pipeline with the columns its default options build; a pipeline that
    fails to build is listed with its error, never raised."""
    prepare_environment(settings)
    infos = []
    with (
        tempfile.TemporaryDirectory(prefix="bashgym-list-") as tmp,
        open_models(settings, host.registry, host.hook, serve=False) as models,
    ):
        run = RunContext(run_dir=Path(tmp), settings=settings, models=models)
        for name in host.registry.names("pipelines"):
            infos.append(_describe(host.registry.get("pipelines", name), run))
    return infos


def description(obj: object) -> str:
    """A pipeline's one-paragraph description, whole (`summary()`: its `description`, else its
    docstring's first paragraph as one line; a sentence wrapped over two lines stays whole)."""
    return str(type(obj).summary()).strip()  # type: ignore[attr-defined]


def _describe(registered: Registered, run: RunContext) -> PipelineInfo:
    obj = registered.obj
    info = PipelineInfo(
        name=registered.name,
        plugin=registered.plugin,
        description=description(obj),
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
        builder, origins = assemble(Step("pipeline", registered, options), [], run, seed)
    except ValidationError as exc:
        info.error = f"needs options: {explain_validation(exc)}"
        info.needs = needs(exc, obj.Options)
        return info
    except Exception as exc:  # noqa: BLE001 -- one broken pipeline never breaks the listing
        cause = exc.__cause__ if isinstance(exc, InputError) else exc  # the plugin's own error
        info.error = one_line(cause) if cause is not None else str(exc)
        if info.needs_seed and not info.example_seed:
            info.error = f"needs seed rows to build (it ships no example seed): {info.error}"
        return info
    info.columns = generated_columns(builder, origins)
    return info


def needs(exc: ValidationError, options: Any) -> str:
    """What a user sets for a pipeline's default options to build, in words: the plugin's own
    (`set pipeline.csv=PATH to a CSV file`), else the option and what its help says it is."""
    wants = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"])
        option = f"pipeline.{loc}" if loc else "the pipeline's options"
        said = error["msg"].removeprefix("Value error, ")
        field = options.model_fields.get(str(error["loc"][0])) if error["loc"] else None
        what = (field.description or "").strip().rstrip(".") if field is not None else ""
        if (at := said.find(f"set {option}=")) >= 0:  # the plugin says how
            wants.append(said[at:])
        elif error["type"] == "missing":
            wants.append(f"set {option}" + (f" ({what[:1].lower() + what[1:]})" if what else ""))
        else:
            wants.append(f"fix {option}: {said}")
    return "; ".join(wants)
