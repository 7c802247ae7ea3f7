"""Keep rules: a Jinja condition per rule, rendered the way DataDesigner renders expressions.

Conditions run in DataDesigner's own sandboxed Jinja environment (the one behind expression
columns), so a condition that works in a DataDesigner expression works here, with the same
filters and limits. Rows reach the filter as DataFrame rows, where a judge's output may be a
dict, a JSON string or a numpy array of dicts; `row_record` turns every cell into plain JSON
values first, as DataDesigner does for expressions, so `{{ quality.correctness.score >= 3 }}`
reads nested judge scores.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bashgym.text import plain

# The DataDesigner engine modules below are imported inside the functions that use them: this
# module is imported during DataDesigner's plugin discovery (through `filters.config`), in the
# middle of importing `data_designer.config`, and the engine imports `data_designer.config`.

FALSY_RENDERS = frozenset({"", "false", "0", "0.0", "none", "null", "[]", "{}"})


class FilterRule(BaseModel):
    """Keep a row when `keep` renders truthy; otherwise drop it for `reason`."""

    model_config = ConfigDict(extra="forbid")

    keep: str = Field(
        description="Jinja condition over the row, e.g. '{{ quality.correctness.score >= 3 }}'."
    )
    reason: str = Field(min_length=1, description="Why a row failing the condition is dropped.")
    threshold: dict[str, str | int | float] | None = Field(
        default=None,
        description="What a score rule checks, for reports: {column, criterion, min}.",
    )

    @field_validator("keep")
    @classmethod
    def _check_template(cls, keep: str) -> str:
        check_condition(keep)
        return keep


def check_condition(template: str) -> None:
    """Raise ValueError for a condition that is not a parseable Jinja template.

    A text without `{{ }}` or `{% %}` renders to itself and would keep every row, so it is
    refused instead of passing silently.
    """
    stripped = template.strip()
    if not (("{{" in stripped and "}}" in stripped) or ("{%" in stripped and "%}" in stripped)):
        raise ValueError(
            f"keep condition {template!r} is not a Jinja template: write it as '{{{{ ... }}}}', "
            "e.g. '{{ quality.correctness.score >= 3 }}'"
        )
    try:
        ImmutableSandboxedEnvironment().parse(template)
    except TemplateSyntaxError as exc:
        raise ValueError(
            f"keep condition {template!r} is not valid Jinja: {exc.message} (line {exc.lineno})"
        ) from exc


def is_truthy(rendered: str) -> bool:
    """A rendered condition keeps the row unless it reads empty, false, zero or none."""
    return rendered.strip().lower() not in FALSY_RENDERS


def row_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A DataFrame row as the record a condition renders against, the way DataDesigner's
    expression columns see it: numpy values as plain lists and numbers, and every JSON text
    parsed (`'{"score": 4}'` becomes a dict, `"42"` the number 42)."""
    from data_designer.engine.processing.utils import deserialize_json_values  # see top

    return deserialize_json_values({str(k): plain(v) for k, v in row.items()})


@dataclass
class Verdict:
    """Why one row is dropped: the failing rule's reason, or that reason plus the error."""

    reason: str


class RuleEvaluator:
    """Rules compiled once against a dataset's columns; `verdict(row)` is None to keep."""

    def __init__(self, rules: Sequence[FilterRule], columns: Sequence[str], *, engine: Any = None):
        from data_designer.engine.processing.ginja.environment import (  # see top
            NativeJinjaSandboxEnvironment,
            UserTemplateSandboxEnvironment,
        )

        native = engine is not None and str(getattr(engine, "value", engine)) == "native"
        env_cls = NativeJinjaSandboxEnvironment if native else UserTemplateSandboxEnvironment
        # Dict keys win over dict methods, so a criterion named "items" or "values" still reads.
        self.env = env_cls(allowed_references=list(columns), prefer_dict_key_access=True)
        # DataDesigner's render compiles the template on every call (~1 ms); the rules are
        # fixed for this dataset, so each is compiled once.
        self.env.from_string = functools.lru_cache(maxsize=None)(self.env.from_string)
        self.rules = list(rules)
        self.errors: dict[int, str] = {}
        for i, rule in enumerate(self.rules):
            try:
                self.env.validate_template(rule.keep)
            # An unknown column, a forbidden construct, a filter DataDesigner lacks: any of
            # them fails the rule for every row, each recorded, rather than the whole run.
            except Exception as exc:  # noqa: BLE001
                self.errors[i] = error_text(exc)

    def verdict(self, record: Mapping[str, Any]) -> Verdict | None:
        """The first failing rule's reason; a rule that cannot be evaluated drops the row too."""
        for i, rule in enumerate(self.rules):
            if i in self.errors:
                return Verdict(f"{rule.reason} (condition failed: {self.errors[i]})")
            try:
                rendered = self._render(rule.keep, record)
            # Row data breaks conditions in open-ended ways (a str compared with an int, a
            # missing key, a division by zero): the row is dropped with the error, not the run.
            except Exception as exc:  # noqa: BLE001
                return Verdict(f"{rule.reason} (condition failed: {error_text(exc)})")
            if not is_truthy(rendered):
                return Verdict(rule.reason)
        return None

    def _render(self, template: str, record: Mapping[str, Any]) -> str:
        from data_designer.engine.processing.ginja.exceptions import (  # see top
            EmptyTemplateRenderError,
        )

        try:
            return self.env.render_template(template, dict(record), skip_template_validation=True)
        except EmptyTemplateRenderError as exc:
            if exc.__cause__ is None:  # rendered to nothing: a falsy condition, not an error
                return ""
            raise


def error_text(exc: BaseException) -> str:
    """One line naming the error, short enough for a drop reason."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    text = " ".join(str(cause).split()) or type(cause).__name__
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(cause).__name__}: {text}"
