"""A rubric on a DataDesigner builder: the judge column, keep rules, a total, and score reading.

Pipelines call these directly (`judge_column` into their own builder, `threshold_rules` into
the filter processor), so the Jinja they emit must hold in DataDesigner's secure sandbox, where
only a few filters exist (`int` yes; `default`, `sum`, `tojson` no) and an undefined lookup
raises. Every score read is therefore written as

    (((quality["correctness"] or {})["score"] or 0) | int)

which is the score when it is there, and 0 when the cell, the criterion or the score is
missing, None or not a number: a row whose judge output is damaged (a failed parse, a cell
read back as text) then counts as the lowest score and is dropped with its criterion's reason,
instead of making the condition error. Subscripts, not dots, reach the criterion, so a
criterion named like a dict method (`items`, `values`) still reads its own key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import data_designer.config as dd

from bashgym.contracts import InputError
from bashgym.text import plain
from bashgym_designer.filters import FilterRule
from bashgym_designer.rubrics.rubric import Rubric, check_threshold

PROMPT_TEMPLATE = """{instructions}

Evaluate the response below to the task above it. Score every criterion of the response \
schema on its own scale, and give your reasoning before each score.

<task>
{{{{ {prompt_column} }}}}
</task>

<response>
{{{{ {response_column} }}}}
</response>
"""


SEE_LEVELS = "as defined in the rubric"


def rubric_system_prompt(rubric: Rubric) -> str:
    """Every criterion with the meaning of each level, as the judge's system prompt.

    DataDesigner appends a judge's response schema to the prompt, after the row's task and
    response, and it used to carry every level's definition there: the same long text in every
    request, where no prompt cache reaches (over half a verdict request on the embedded model).
    In the system prompt the rubric is a fixed prefix that the embedded model's slots and hosted
    prompt caches skip; the schema's levels then only point to it."""
    parts = [
        "You are a strict, fair reviewer. Score each criterion on its own scale, reading the "
        "level definitions below, and give your reasoning before each score."
    ]
    for c in rubric.criteria:
        levels = "\n".join(f"- {k}: {text}" for k, text in sorted(c.options.items(), reverse=True))
        parts.append(f"## {c.name}\n{c.description}\n{levels}")
    text = "\n\n".join(parts)
    # DataDesigner renders a system prompt as Jinja: a rubric quoting braces stays literal
    return (
        f"{{% raw %}}{text}{{% endraw %}}" if any(m in text for m in ("{{", "{%", "{#")) else text
    )


def _check_column(column: str, what: str) -> None:
    """Jinja reads a column as a bare name, so it must be an identifier (no '-', no spaces)."""
    if not column.isidentifier():
        raise InputError(
            f"{what} {column!r} cannot be read in a Jinja template: use letters, digits and _"
        )


def judge_prompt(rubric: Rubric, *, prompt_column: str, response_column: str) -> str:
    """The rubric's instructions, then the task and the response in clearly delimited blocks.

    DataDesigner appends the score definitions (each criterion, every level) and the JSON
    response schema after this text, so the prompt itself does not repeat them.
    """
    _check_column(prompt_column, "prompt column")
    _check_column(response_column, "response column")
    return PROMPT_TEMPLATE.format(
        instructions=rubric.instructions.strip(),
        prompt_column=prompt_column,
        response_column=response_column,
    )


def judge_column(
    column: str,
    rubric: Rubric,
    *,
    model_alias: str,
    prompt_column: str = "prompt",
    response_column: str = "response",
    prompt: str | None = None,
) -> dd.LLMJudgeColumnConfig:
    """An LLM judge column scoring `response_column` against `prompt_column` with `rubric`.

    Its value per row is `{"<criterion>": {"reasoning": str, "score": int}}`. The rubric's
    levels are its system prompt (`rubric_system_prompt`). `prompt`, a full Jinja template,
    replaces the built-in one (DataDesigner still appends the response schema).
    """
    _check_column(column, "judge column")
    text = (
        prompt
        if prompt is not None
        else judge_prompt(rubric, prompt_column=prompt_column, response_column=response_column)
    )
    scores = [
        # int keys: DataDesigner returns the option key itself, and only ints compare with >=.
        dd.Score(
            name=c.name, description=c.description, options=dict.fromkeys(c.options, SEE_LEVELS)
        )
        for c in rubric.criteria
    ]
    return dd.LLMJudgeColumnConfig(
        name=column,
        model_alias=model_alias,
        system_prompt=rubric_system_prompt(rubric),
        prompt=text,
        scores=scores,
    )


def score_expr(column: str, criterion: str) -> str:
    """Jinja (without braces) for one criterion's score as an int, 0 when missing or invalid."""
    return f'((({column}["{criterion}"] or {{}})["score"] or 0) | int)'


def resolve_thresholds(rubric: Rubric, thresholds: Mapping[str, int] | None) -> dict[str, int]:
    """Each criterion's threshold: the rubric's own, overridden by `thresholds`.

    An override for a criterion the rubric lacks is an error naming the real ones: a typo
    must not silently leave a criterion unfiltered.
    """
    thresholds = dict(thresholds or {})
    unknown = sorted(set(thresholds) - set(rubric.names))
    if unknown:
        raise InputError(
            f"thresholds name {', '.join(map(repr, unknown))}, not criteria of rubric "
            f"{rubric.name!r}: use {', '.join(rubric.names)}"
        )
    out: dict[str, int] = {}
    for criterion in rubric.criteria:
        value = thresholds.get(criterion.name, criterion.threshold)
        try:
            check_threshold(criterion, value)
        except ValueError as exc:
            raise InputError(f"rubric {rubric.name!r}: {exc}") from None
        out[criterion.name] = value
    return out


def threshold_rules(
    column: str, rubric: Rubric, thresholds: Mapping[str, int] | None = None
) -> list[FilterRule]:
    """One keep rule per criterion: its score (0 when missing) must reach its threshold."""
    _check_column(column, "judge column")
    return [
        FilterRule(
            keep=f"{{{{ {score_expr(column, name)} >= {value} }}}}",
            reason=f"{rubric.name}: {name} below {value}",
            threshold={"column": column, "criterion": name, "min": value},
        )
        for name, value in resolve_thresholds(rubric, thresholds).items()
    ]


def total_score_expr(column: str, rubric: Rubric) -> str:
    """A Jinja expression summing the criterion scores (a missing score adds 0).

    Fits `dd.ExpressionColumnConfig(expr=..., dtype="int")`, e.g. to rank rows or to pick the
    better of two responses for preference pairs. DataDesigner's sandbox refuses templates
    deeper than 10 AST levels, and each robust score read is 6 deep, so the sum is a balanced
    tree; past 4 criteria it reads scores plainly (`quality["c"]["score"] | int`, safe inside
    DataDesigner, which only keeps judge cells that hold every criterion).
    """
    _check_column(column, "judge column")
    names = rubric.names
    robust = "{{ " + _balanced_sum([score_expr(column, n) for n in names]) + " }}"
    bare = "{{ " + _balanced_sum([f'({column}["{n}"]["score"] | int)' for n in names]) + " }}"
    for expr in (robust, bare):
        if _sandbox_accepts(expr, column):
            return expr
    raise InputError(
        f"rubric {rubric.name!r} has too many criteria ({len(names)}) to sum in one "
        "DataDesigner expression; sum them in pandas with scores_of() instead"
    )


def _balanced_sum(terms: list[str]) -> str:
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return f"({_balanced_sum(terms[:middle])} + {_balanced_sum(terms[middle:])})"


def _sandbox_accepts(template: str, column: str) -> bool:
    """Whether DataDesigner's secure Jinja sandbox (expression columns' default) takes it."""
    # DataDesigner's engine costs ~0.15 s to import (measured): only a total pays it
    from data_designer.engine.processing.ginja.environment import UserTemplateSandboxEnvironment

    try:
        UserTemplateSandboxEnvironment(allowed_references=[column]).validate_template(template)
    except Exception:  # noqa: BLE001 -- any refusal means: try the next form
        return False
    return True


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    value = plain(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, Mapping) else None


def _as_score(value: Any) -> int | None:
    value = plain(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def scores_of(value: Any, rubric: Rubric) -> dict[str, int | None]:
    """A judge cell -> {criterion: score}; None for a criterion whose score is missing/invalid.

    The cell may be the dict DataDesigner produced, its JSON text (CSV/JSONL round trips), or
    hold numpy scalars and arrays (a parquet round trip). A score off the criterion's scale is
    invalid too: it was not an answer the rubric allows.
    """
    cell = _as_mapping(value) or {}
    out: dict[str, int | None] = {}
    for criterion in rubric.criteria:
        entry = _as_mapping(cell.get(criterion.name))
        score = _as_score(entry.get("score")) if entry is not None else None
        out[criterion.name] = score if score in criterion.options else None
    return out
