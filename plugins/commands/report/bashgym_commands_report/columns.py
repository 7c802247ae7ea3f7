"""Which dataset columns a report charts, read from a DataDesigner config (live or saved).

A live `DataDesignerConfigBuilder` hands out pydantic column and processor configs; a run dir's
`builder_config.json`, read back, holds the same things as plain dicts. Both go through one
reader here, so what a report draws (a judge's threshold line, say) does not depend on which.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Samplers whose values are categories (bars per value) vs numbers (a binned histogram).
CATEGORY_SAMPLERS = frozenset({"category", "subcategory", "bernoulli"})
NUMBER_SAMPLERS = frozenset(
    {"uniform", "gaussian", "poisson", "binomial", "scipy", "bernoulli_mixture"}
)
# `{{ quality.correctness.score >= 3 }}`: a keep rule on one judge score, when a rule does not
# say its threshold in words (a config written by hand, or exported without BashGym's filter).
SCORE_RULE = re.compile(
    r"^\{\{\s*(?P<column>[A-Za-z_][\w-]*)\.(?P<criterion>[A-Za-z_][\w-]*)\.score\s*"
    r"(?P<op>>=|>)\s*(?P<min>-?\d+(?:\.\d+)?)\s*\}\}$"
)


@dataclass
class ReportColumns:
    """Which dataset columns get which chart."""

    samplers: list[str]  # category-like columns: value distributions
    judges: dict[str, list[str]]  # judge column -> criterion names: score histograms
    numbers: list[str] = field(default_factory=list)  # other numeric columns: histograms
    # (judge column, criterion) -> the lowest score the config keeps (from its filter rules)
    thresholds: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def charted(self) -> list[str]:
        return [*self.samplers, *self.judges, *self.numbers]


def columns_of(builder: Any) -> ReportColumns:
    """The chartable columns of a DataDesignerConfigBuilder, read from its column configs.

    Sampler columns with category-like values become distributions, numeric samplers and
    int/float expressions become histograms, and every LLM judge column brings its score names.
    Columns marked `drop` are kept: the renderer shows only what the rows carry.
    """
    samplers: list[str] = []
    numbers: list[str] = []
    judges: dict[str, list[str]] = {}
    for config in builder.get_column_configs():
        kind = _text(_get(config, "column_type"))
        name = _get(config, "name")
        if kind == "sampler":
            sampler = _text(_get(config, "sampler_type"))
            if sampler in CATEGORY_SAMPLERS:
                samplers.append(name)
            elif sampler in NUMBER_SAMPLERS:
                numbers.append(name)
        elif kind == "llm-judge":
            judges[name] = [str(_get(score, "name")) for score in _get(config, "scores") or []]
        elif kind == "expression" and _text(_get(config, "dtype")) in ("int", "float"):
            numbers.append(name)
    thresholds: dict[tuple[str, str], float] = {}
    for processor in getattr(builder, "get_processor_configs", list)():
        for rule in _get(processor, "rules") or []:
            found = threshold_of(rule)
            if found is not None:
                thresholds[found[0]] = found[1]
    return ReportColumns(samplers, judges, numbers, thresholds)


def threshold_of(rule: Any) -> tuple[tuple[str, str], float] | None:
    """((column, criterion), lowest kept score) of a keep rule, or None when it is not one.

    Read from the rule's `threshold` ({column, criterion, min}) when it states one, else from
    a keep condition of the form `{{ column.criterion.score >= N }}`."""
    mark = _get(rule, "threshold")
    if mark is not None and _get(mark, "column") and _get(mark, "criterion"):
        low = _number(_get(mark, "min"))
        if low is not None:
            return (str(_get(mark, "column")), str(_get(mark, "criterion"))), low
    match = SCORE_RULE.match(str(_get(rule, "keep") or "").strip())
    if match is None or match["op"] != ">=":  # `> N` keeps from a score between bins: no line
        return None
    return (match["column"], match["criterion"]), _number(match["min"])  # type: ignore[return-value]


def columns_from_config(doc: Mapping[str, Any]) -> ReportColumns:
    """`columns_of` for a saved DataDesigner config (`builder_config.json` in a run dir)."""
    config = doc.get("data_designer") if isinstance(doc, Mapping) else None
    config = config if isinstance(config, Mapping) else {}
    columns = [c for c in config.get("columns") or [] if isinstance(c, Mapping) and "name" in c]
    processors = [p for p in config.get("processors") or [] if isinstance(p, Mapping)]

    class Saved:  # the two methods of a builder that `columns_of` reads
        def get_column_configs(self) -> list[Any]:
            return columns

        def get_processor_configs(self) -> list[Any]:
            return processors

    return columns_of(Saved())


def _get(item: Any, key: str) -> Any:
    """`item.key` of a config object, or `item[key]` of its saved (dict) form."""
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _text(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        number = float(str(value))
    except ValueError:
        return None
    return int(number) if number.is_integer() else number
