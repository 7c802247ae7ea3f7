"""Fresh secrets for leak tests: realistic shapes, random values made at each call.

Why fresh: a test that plants a fixed token proves only that this one value is caught; a new
value each run keeps a test from passing on a string some rule happens to know. Shapes follow
the providers' documented formats (the scrubber's own tests keep fixed corpora of their own)."""

from __future__ import annotations

import secrets
import string

ALNUM = string.ascii_letters + string.digits


def random_text(n: int, alphabet: str = ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def github_token() -> str:
    """A classic GitHub personal access token: `ghp_` and 36 letters and digits."""
    return "ghp_" + random_text(36)


def anthropic_key() -> str:
    """An Anthropic API key: `sk-ant-api03-`, 93 URL-safe characters, `AA`."""
    return "sk-ant-api03-" + random_text(93, ALNUM + "-_") + "AA"


def openai_key() -> str:
    """An OpenAI project key: `sk-proj-`, 40 characters, `T3BlbkFJ`, 40 more."""
    return "sk-proj-" + random_text(40) + "T3BlbkFJ" + random_text(40)


__all__ = ["anthropic_key", "github_token", "openai_key", "random_text"]
