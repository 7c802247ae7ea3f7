"""BashGym's DataDesigner plugin types, rewritten as DataDesigner built-ins for an export.

An exported config must run where only `data-designer` is installed: BashGym's
`bashgym-code-validation` column and `bashgym-filter` processor exist only where the
bashgym-designer distribution (not on PyPI) is installed. So the export rewrites them:

* `bashgym-code-validation` on Python or SQL -> DataDesigner's `validation` column with the
  `code` validator (ruff for Python, sqlfluff for SQL), one target, same column name; its value
  has `is_valid` as BashGym's has, so conditions on `<column>.is_valid` still hold. Shell code
  has no DataDesigner validator: that column is left out, and so is every rule naming it.
* `bashgym-filter` -> DataDesigner has no row filter (its processors are `drop_columns` and
  `schema_transform`), so each rule becomes a dropped bool `expression` column
  (`keep_row_<n>`, its own condition) and one kept bool column `keep_row` is true when all of
  them are: the user keeps the rows where it is true. One column per rule, not one expression
  joining them: DataDesigner refuses a template nested deeper than 10 (MAX_AST_DEPTH), which
  three joined score rules already pass. A rule written with `{% %}` statements is no single
  expression and is left out (said in a note).
Every change is a note the export prints, so what did not travel is said, never silent.

Read by type name and field, not by importing bashgym_designer's classes: what is rewritten is
the config as DataDesigner holds it.
"""

from __future__ import annotations

import re
from typing import Any

import data_designer.config as dd

from bashgym_commands_pipeline.columns import enum_text

CODE_VALIDATION = "bashgym-code-validation"
FILTER = "bashgym-filter"
KEEP_COLUMN = "keep_row"
ONE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*)\}\}\s*$", re.S)


def make_portable(builder: dd.DataDesignerConfigBuilder) -> list[str]:
    """Rewrite BashGym plugin columns and processors as built-ins (in place); the notes say
    what changed and what could not travel."""
    notes: list[str] = []
    left_out: list[str] = []
    for column in builder.get_column_configs():
        if enum_text(column.column_type) != CODE_VALIDATION:
            continue
        language = str(getattr(column, "language", ""))
        if language == "python" or language.startswith("sql:"):
            builder.add_column(  # same name: replaces it where it was
                dd.ValidationColumnConfig(
                    name=column.name,
                    drop=column.drop,
                    target_columns=[column.target_column],
                    validator_type="code",
                    validator_params=dd.CodeValidatorParams(code_lang=language),
                )
            )
            notes.append(
                f"column {column.name!r} ({CODE_VALIDATION}, {language}) exported as "
                "DataDesigner's code validation column"
            )
        else:
            builder.delete_column(column.name)
            left_out.append(column.name)
            notes.append(
                f"column {column.name!r} ({CODE_VALIDATION}, {language}) cannot travel: "
                f"DataDesigner validates only python and sql code; left out of the export"
            )
    for processor in list(builder.get_processor_configs()):
        if enum_text(processor.processor_type) == FILTER:
            notes += _filter_as_column(builder, processor, left_out)
    return notes


def _filter_as_column(
    builder: dd.DataDesignerConfigBuilder, processor: Any, left_out: list[str]
) -> list[str]:
    builder._remove_processor_by_name(processor.name)  # DataDesigner has no public remove
    notes = []
    parts = []
    for rule in processor.rules:
        match = ONE_EXPRESSION.match(rule.keep)
        named = [c for c in left_out if re.search(rf"\b{re.escape(c)}\b", rule.keep)]
        if match is None or "{{" in match["expr"] or "{%" in rule.keep:
            notes.append(
                f"filter {processor.name!r}: rule {rule.reason!r} ({rule.keep}) cannot travel: "
                "it is not one {{ expression }}; left out of keep_row"
            )
        elif named:
            notes.append(
                f"filter {processor.name!r}: rule {rule.reason!r} cannot travel: it reads "
                f"{', '.join(named)}, left out above"
            )
        else:
            parts.append(f"({match['expr'].strip()})")
    if not parts:
        return [*notes, f"filter {processor.name!r} cannot travel: no rule could be exported"]
    name = KEEP_COLUMN if KEEP_COLUMN not in _names(builder) else f"{KEEP_COLUMN}_{processor.name}"
    for i, part in enumerate(parts, 1):
        builder.add_column(
            dd.ExpressionColumnConfig(
                name=f"{name}_{i}", expr="{{ true if " + part + " else false }}", dtype="bool",
                drop=True,
            )
        )  # fmt: skip
    rules = ", ".join(f"{name}_{i}" for i in range(1, len(parts) + 1))
    builder.add_column(
        dd.ExpressionColumnConfig(
            # `min` of bools is false if any is: DataDesigner's sandbox permits `min`, not
            # `reject` or `select`, and a chain of `and` would nest past its depth limit
            name=name,
            expr="{{ [" + rules + "] | min }}",
            dtype="bool",
        )
    )
    notes.append(
        f"filter {processor.name!r} ({FILTER}, {len(parts)} rules) cannot travel as a filter: "
        f"DataDesigner has no row-filter processor; exported as the bool column {name!r} "
        f"(true when every rule holds): keep the rows where it is true"
    )
    return notes


def _names(builder: dd.DataDesignerConfigBuilder) -> set[str]:
    return {c.name for c in builder.get_column_configs()}
