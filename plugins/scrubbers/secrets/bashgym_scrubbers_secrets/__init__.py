"""BashGym scrubber `secrets`: typed placeholders for API keys, tokens, private keys, URL
passwords and secret-named values, found by detect-secrets' detectors and BashGym's own rules
behind a multi-pattern prefilter (Hyperscan, RE2 or `re`).

The kernel installs this distribution with itself and runs it by default (settings
`scrub.scrubbers = ["secrets"]`); it registers like any third-party scrubber would.
"""

from __future__ import annotations

from collections.abc import Sequence

from bashgym import hookimpl
from bashgym.contracts import Scrubber
from bashgym_scrubbers_secrets.detect import PLACEHOLDER, PLACEHOLDER_RE, detector_types
from bashgym_scrubbers_secrets.detect import Scrubber as Redactor

__all__ = ["PLACEHOLDER", "PLACEHOLDER_RE", "Redactor", "SecretsScrubber", "detector_types"]


class SecretsScrubber(Scrubber):
    """API keys, tokens, private keys, URL passwords and secret-named values."""

    def redactor(self, allow: Sequence[str]) -> Redactor:
        return Redactor(allow=allow)


@hookimpl
def register_scrubbers(register):
    register("secrets", SecretsScrubber())
