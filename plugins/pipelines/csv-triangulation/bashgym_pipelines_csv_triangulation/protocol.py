"""The `submit(answer)` / `hook(value, name=...)` protocol between sandboxed code and BashGym.

The code a teacher writes ends by calling `submit(answer)`. The answer is normalized in the
sandbox and written to stdout wrapped in a marker: `<<bashgym:submit:NONCE>>{json}<</bashgym>>`;
`hook(value, name=...)` writes a `hook` marker the same way for an intermediate value. NONCE is
drawn per episode and lives only in the worker, so text that the code prints, or data in the
CSV, can never pass for a submission: what is not a marker with the episode's nonce stays
ordinary output. A run that prints an answer without calling `submit()` therefore submits
nothing, and the episode fails; there is no lenient parsing of printed answers.

Standard library only: the sandbox worker imports this module.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

SUBMIT, HOOK = "submit", "hook"
_OPEN, _CLOSE = "<<bashgym:", "<</bashgym>>"


def new_nonce() -> str:
    return secrets.token_hex(8)


def marker(kind: str, nonce: str, payload: dict[str, Any]) -> str:
    """One marker line: what `submit()` and `hook()` print."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"{_OPEN}{kind}:{nonce}>>{body}{_CLOSE}\n"


@dataclass
class Extracted:
    """Output with the markers taken out, and what they carried."""

    output: str
    submissions: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)


def extract(text: str, nonce: str) -> Extracted:
    """Take this episode's markers out of `text`; markers with any other nonce stay as text."""
    pattern = re.compile(
        re.escape(_OPEN) + rf"({SUBMIT}|{HOOK}):{re.escape(nonce)}>>(.*?)" + re.escape(_CLOSE)
        + r"\n?"
    )  # fmt: skip
    found = Extracted(output="")
    pieces, last = [], 0
    for match in pattern.finditer(text):
        pieces.append(text[last : match.start()])
        last = match.end()
        try:
            payload = json.loads(match.group(2))
        except ValueError:
            continue
        (found.submissions if match.group(1) == SUBMIT else found.hooks).append(payload)
    pieces.append(text[last:])
    found.output = "".join(pieces)
    return found


def clip(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to `limit` characters, keeping its head and tail (errors are at the end)."""
    if len(text) <= limit:
        return text, False
    half = max(limit // 2, 1)
    left_out = len(text) - 2 * half
    return f"{text[:half]}\n[... {left_out} characters left out ...]\n{text[-half:]}", True
