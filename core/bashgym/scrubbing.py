"""The run's scrubbing: the configured Scrubber plugins, applied to frames and event text.

Seed rows are redacted before any pipeline or runner sees them, every row before the sinks, event
text before events.jsonl. With scrubbing on and a configured scrubber missing, a run refuses to
start: a dataset is never written unscrubbed by accident.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, Redactor

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.registry import Registry
    from bashgym.settings import ScrubSettings


@dataclass
class Scrubbing:
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
        return dict(enabled=True, redacted=redacted, redacted_total=total, rows_touched=touched)
