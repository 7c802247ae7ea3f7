"""The DataDesigner columns both coding-agent pipelines share: ids, samplers, the seed, the task
prompt, a trajectory with its rendered text, and ruff checks on the Python files it wrote.

Only sampler, LLM and expression columns are used here, plus the code judge's ruff columns, so
`builder.write_config()` exports the whole pipeline as a DataDesigner config; Jinja expressions,
not Python columns, render the trajectory and pick out its Python files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.validation import add_validation, valid_rule

from bashgym.contracts import RunContext
from bashgym_pipelines_coding_agent import prompts, seeds
from bashgym_pipelines_coding_agent.models import role_models
from bashgym_pipelines_coding_agent.options import CodingAgentOptions
from bashgym_pipelines_coding_agent.trajectory import Trajectory, render_template

if TYPE_CHECKING:
    import pandas as pd
    from bashgym_designer.filters import FilterRule
    from data_designer.config import DataDesignerConfigBuilder

RECORD_ID = "record_id"
TASK_COLUMN = "task_prompt"


def task_builder(
    options: CodingAgentOptions,
    run: RunContext,
    seed: pd.DataFrame | None,
    pipeline: str,
    solvers: dict[str, tuple[str, float]],
) -> tuple[DataDesignerConfigBuilder, dict[str, str]]:
    """The start both coding-agent pipelines share: model configs for the task writer, the
    judge and each solver role (`solvers`: role -> (model alias, temperature)), the seed when
    there is one, then the record id, samplers and task prompt.

    Returns the builder and role -> DataDesigner alias (see `models.role_models`).
    """
    roles = {
        "task": (options.model, task_params(options)),
        "judge": (options.judge_model, judge_params(options)),
    }
    for role, (model, temperature) in solvers.items():
        roles[role] = (model, solution_params(options, temperature))
    models, alias = role_models(run, roles, pipeline)
    builder = dd.DataDesignerConfigBuilder(model_configs=models)
    if seed is not None:
        attach_seed(builder, seed, options, run, pipeline)
    add_task_columns(builder, options, alias["task"], seeded=seed is not None)
    return builder, alias


def attach_seed(
    builder: DataDesignerConfigBuilder,
    seed: pd.DataFrame,
    options: CodingAgentOptions,
    run: RunContext,
    pipeline: str,
) -> None:
    """Reduce the seed to its tasks and attach it from a Parquet file in the run dir."""
    prepared = seeds.prepare_seed(seed, options.seed_column, run, pipeline)
    folder = Path(run.run_dir) / "seeds"
    folder.mkdir(parents=True, exist_ok=True)
    source = dd.LocalFileSeedSource.from_dataframe(
        prepared, str((folder / f"{pipeline}.parquet").resolve())
    )
    builder.with_seed_dataset(source, sampling_strategy=dd.SamplingStrategy.ORDERED)


def add_task_columns(
    builder: DataDesignerConfigBuilder, options: CodingAgentOptions, alias: str, seeded: bool
) -> list[str]:
    """A record id, the sampler columns and the task prompt; returns the sampler names."""
    builder.add_column(
        dd.SamplerColumnConfig(name=RECORD_ID, sampler_type="uuid", params=dd.UUIDSamplerParams())
    )
    samplers = options.samplers()
    for column, (values, weights) in samplers.items():
        builder.add_column(
            dd.SamplerColumnConfig(
                name=column,
                sampler_type="category",
                params=dd.CategorySamplerParams(values=values, weights=weights),
            )
        )
    builder.add_column(
        dd.LLMTextColumnConfig(
            name=TASK_COLUMN,
            model_alias=alias,
            system_prompt=prompts.TASK_SYSTEM_PROMPT,
            prompt=prompts.task_prompt(list(samplers), seeded),
        )
    )
    return list(samplers)


def add_solution_columns(
    builder: DataDesignerConfigBuilder, name: str, alias: str, max_steps: int | None = None
) -> str:
    """The structured trajectory `name` and its markdown rendering; returns the text column.
    `max_steps` caps the tool calls in the schema itself (a model decoding under the schema
    cannot run long) and in the prompt."""
    schema = solution_schema(max_steps)
    prompt = prompts.solution_prompt()
    if max_steps is not None:
        prompt += f"\nUse at most {max_steps} tool calls."
    builder.add_column(
        dd.LLMStructuredColumnConfig(
            name=name,
            model_alias=alias,
            system_prompt=prompts.SOLVER_SYSTEM_PROMPT,
            prompt=prompt,
            output_format=schema,
        )
    )
    text = f"{name}_text"
    builder.add_column(dd.ExpressionColumnConfig(name=text, expr=render_template(name)))
    return text


def solution_schema(max_steps: int | None = None) -> dict[str, Any]:
    """Trajectory's JSON schema without titles and descriptions, steps capped at `max_steps`.

    The solution prompt explains every field already, and DataDesigner appends the schema after
    the row's task, where no prompt cache reaches: each description there cost every request
    its tokens again (about 400 of a solution request's 1,450 on the embedded model)."""
    schema = _bare(Trajectory.model_json_schema())
    if max_steps is not None:
        schema["properties"]["steps"]["maxItems"] = max_steps
    return schema


def _bare(schema: Any) -> Any:
    """`schema` without `title`/`description` keywords (property *names* are kept as they are)."""
    if isinstance(schema, list):
        return [_bare(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "description"):
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _bare(sub) for name, sub in value.items()}
        else:
            out[key] = _bare(value)
    return out


def add_python_checks(
    builder: DataDesignerConfigBuilder,
    template: Callable[[int], str],
    prefix: str,
    count: int,
) -> list[tuple[str, str]]:
    """Ruff on the first `count` Python files of a trajectory: one expression column per file
    (`<prefix>_py_<n>`, rendered by `template(index)`) with its own validation column.
    Returns the (file column, validation column) pairs."""
    checks = python_checks(prefix, count)
    for index, (column, validation) in enumerate(checks):
        builder.add_column(dd.ExpressionColumnConfig(name=column, expr=template(index)))
        add_validation(builder, column, "python", name=validation)
    return checks


def python_checks(prefix: str, count: int) -> list[tuple[str, str]]:
    """The (file column, ruff column) names of `add_python_checks`."""
    return [(f"{prefix}_py_{n}", f"{prefix}_py_{n}_ruff") for n in range(1, count + 1)]


def python_rules(checks: list[tuple[str, str]]) -> list[FilterRule]:
    """Keep rules dropping a row whose checked Python file fails ruff."""
    return [valid_rule(validation, column, "python") for column, validation in checks]


def solution_params(options: CodingAgentOptions, temperature: float) -> dict[str, Any]:
    return _penalized(options, {"temperature": temperature, "max_tokens": options.max_tokens})


def task_params(options: CodingAgentOptions) -> dict[str, Any]:
    params = {"temperature": options.task_temperature, "max_tokens": options.task_max_tokens}
    return _penalized(options, params)


def judge_params(options: CodingAgentOptions) -> dict[str, Any]:
    # Temperature 0: a verdict should not change between two readings of one answer.
    return _penalized(options, {"temperature": 0.0, "max_tokens": options.judge_max_tokens})


def _penalized(options: CodingAgentOptions, params: dict[str, Any]) -> dict[str, Any]:
    """`params` plus the frequency penalty when one is set (the alias sends it in the body)."""
    if options.frequency_penalty is not None:
        params["frequency_penalty"] = options.frequency_penalty
    return params
