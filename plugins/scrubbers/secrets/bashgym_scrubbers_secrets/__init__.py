"""BashGym scrubber `secrets`: typed placeholders for API keys, tokens, private keys, URL
passwords and secret-named values, found by detect-secrets' detectors and BashGym's own rules
behind a multi-pattern prefilter (Hyperscan, RE2 or `re`).

Installed with `bashgym` and loaded by default, it also answers the kernel's `open_scrubbing`:
its `[scrub]` settings table names the scrubbers a run applies (default `["secrets"]`), what is
never redacted, and whether scrubbing is on (`scrubbing.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bashgym import hookimpl
from bashgym.contracts import Scrubber
from bashgym_scrubbers_secrets.detect import PLACEHOLDER, PLACEHOLDER_RE, detector_types
from bashgym_scrubbers_secrets.detect import Scrubber as Redactor
from bashgym_scrubbers_secrets.scrubbing import Scrubbing, ScrubSettings

__all__ = [
    "PLACEHOLDER",
    "PLACEHOLDER_RE",
    "Redactor",
    "ScrubSettings",
    "Scrubbing",
    "SecretsScrubber",
    "detector_types",
]


class SecretsScrubber(Scrubber):
    """API keys, tokens, private keys, URL passwords and secret-named values."""

    def redactor(self, allow: Sequence[str]) -> Redactor:
        return Redactor(allow=allow)


@hookimpl
def register_scrubbers(register):
    register("secrets", SecretsScrubber())


@hookimpl
def register_settings(register):
    register("scrub", ScrubSettings)


@hookimpl
def open_scrubbing(settings, registry):
    return Scrubbing.open(settings.table(ScrubSettings), registry)
