"""A run's secret scrubbing, as this default plugin composes it: the `[scrub]` settings table
and the scrubbers it names, applied in order to frames and event text.

The kernel decides where scrubbing happens (seed rows before any pipeline or runner, every row
before the sinks, event text before events.jsonl) and refuses to run when no plugin answers
`open_scrubbing`; this module decides what scrubbing is: which registered scrubbers run, what is
never redacted, and whether it is on at all. With scrubbing on and a named scrubber missing,
the run refuses to start: a dataset is never written unscrubbed by accident.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from bashgym.contracts import InputError, Redactor
from bashgym.settings import SettingsTable

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.registry import Registry


class ScrubSettings(SettingsTable):
    """Secret scrubbing of seed rows, output rows and events."""

    table: ClassVar[str] = "scrub"

    enabled: bool = Field(default=True, description="Redact secrets before anything is written.")
    scrubbers: list[str] = Field(
        default_factory=lambda: ["secrets"], description="Scrubber plugins to run, in order."
    )
    allow: list[str] = Field(
        default_factory=list,
        description="Never redacted: literal strings, or regexes written 're:PATTERN'.",
    )

    @field_validator("allow")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for entry in value:
            if entry.startswith("re:"):
                try:
                    re.compile(entry[3:])
                except re.error as exc:
                    raise ValueError(f"{entry!r} is not a valid regex: {exc}") from None
        return value


@dataclass
class Scrubbing:
    """The kernel's `Scrubbing`: the configured redactors, in order, counting what they did."""

    enabled: bool
    redactors: list[Redactor] = field(default_factory=list)
    rows_touched: int = 0

    @classmethod
    def open(cls, settings: ScrubSettings, registry: Registry) -> Scrubbing:
        if not settings.enabled:
            return cls(enabled=False)
        redactors = []
        for name in settings.scrubbers:
            if name not in registry.items["scrubbers"]:
                installed = ", ".join(registry.names("scrubbers")) or "none"
                raise InputError(
                    f"scrubbing is on but scrubber {name!r} is not installed (installed: "
                    f"{installed}); install bashgym-scrubbers-{name}, or set scrub.enabled = "
                    "false if this data holds no secrets"
                )
            redactors.append(registry.get("scrubbers", name).obj.redactor(settings.allow))
        if not redactors:
            raise InputError("scrubbing is on but scrub.scrubbers is empty")
        return cls(enabled=True, redactors=redactors)

    def frame(self, dataset: pd.DataFrame) -> pd.DataFrame:
        for redactor in self.redactors:
            dataset, touched = redactor.frame(dataset)
            self.rows_touched += touched
        return dataset

    def text(self, value: str) -> str:
        for redactor in self.redactors:
            value = redactor.text(value)
        return value

    def report(self) -> dict[str, Any]:
        if not self.enabled:
            return {"enabled": False}
        counts: Counter[str] = Counter()
        for redactor in self.redactors:
            counts.update(redactor.counts)
        redacted = dict(sorted(counts.items()))
        total, touched = sum(redacted.values()), self.rows_touched
        out = dict(enabled=True, redacted=redacted, redacted_total=total, rows_touched=touched)
        # a column whose name held a secret: counted once each (a streamed run scrubs many
        # frames of the same columns), and only where it happened, so old reports stay alike
        renamed = sum(getattr(r, "columns_renamed", 0) for r in self.redactors)
        if renamed:
            out["columns_renamed"] = renamed
        return out
