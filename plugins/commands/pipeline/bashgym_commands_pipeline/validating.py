"""`bashgym validate`: DataDesigner's compile step, plus the model wiring it checks only later.

DataDesigner's `validate()` prints violation panels and raises one generic error, and it checks
model aliases and keys only when generation starts. A pipeline author wants every problem at
once, each on one line naming the column at fault, without a model being called: the
violations are recomputed with DataDesigner's own validator, and each alias a column calls is
checked against the config and BashGym's model settings.

What it prints is redacted with the run's `run.redact`, as its log is (`messages.quiet`): a
problem quotes the config (a prompt's `{{ ... }}` names a missing column, a template error its
text), where a pasted token would otherwise reach the terminal (README "Secret scrubbing").
"""

from __future__ import annotations

from dataclasses import dataclass

from bashgym_designer.constrain import base_alias
from bashgym_designer.models import require_key
from data_designer.config.errors import InvalidConfigError
from data_designer.errors import DataDesignerError

from bashgym.contracts import InputError
from bashgym_commands_pipeline.columns import Column, config_columns, frame_seed, used_aliases
from bashgym_commands_pipeline.messages import one_line, quiet
from bashgym_commands_pipeline.preparing import Prepared


@dataclass
class Validation:
    columns: list[Column]
    problems: list[str]
    warnings: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate(prepared: Prepared) -> Validation:
    """Compile the config with DataDesigner (no model is called) and check its model wiring.

    Problems name the column at fault, e.g. "Expression column 'e' references missing column
    'x'." DataDesigner prints its own violation panels to stdout and raises a generic error;
    the violations are recomputed here with its own validator so each becomes one line.
    """
    builder = prepared.builder
    problems, warnings = _violations(prepared)
    problems += _model_problems(prepared)
    designer = prepared.designer(providers=[])
    try:
        with quiet(prepared.run):
            designer.validate(builder)
    except InvalidConfigError as exc:
        if not problems:
            problems.append(one_line(exc))
    except (DataDesignerError, ValueError) as exc:
        problems.append(one_line(exc))
    redact = prepared.run.redact
    return Validation(
        config_columns(builder, prepared.origins),
        [redact(p) for p in problems],
        [redact(w) for w in warnings],
    )


def _violations(prepared: Prepared) -> tuple[list[str], list[str]]:
    """DataDesigner's column checks as (errors, warnings), one line each."""
    # ~75 ms and ~1 s (measured), and the engine only after prepare_environment (bashgym_designer.
    # designer): this module loads with every command, a validation needs them
    from data_designer.config.column_configs import SeedDatasetColumnConfig
    from data_designer.engine.validation import ViolationLevel, validate_data_designer_config

    seed = frame_seed(prepared.builder)
    if prepared.builder.get_seed_config() is not None and seed is None:
        return [], []  # seed columns unknown until DataDesigner reads the source: it decides
    try:
        config = prepared.builder.build()
    except Exception as exc:  # noqa: BLE001 -- a builder that cannot build is the problem itself
        return [one_line(exc)], []
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
        if config.provider not in models.settings.models and config.provider != base_alias(alias):
            problems.append(
                f"model alias {alias!r} uses provider {config.provider!r}, which is not a BashGym "
                "model alias (see `bashgym models`)"
            )
            continue
        try:
            require_key(models.resolve(config.provider))
        except InputError as exc:
            problems.append(str(exc))
    return problems
