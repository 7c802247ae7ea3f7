"""Settings made fit to print: values under secret-looking keys and URL passwords masked."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|auth|credential)", re.I)
MASK = "****"


def mask_secrets(value: Any, key: str = "") -> Any:
    """A copy fit to print: values under secret-looking keys and URL passwords are masked.

    `*_env` keys hold env var names, not secrets, so they are shown.
    """
    if isinstance(value, dict):
        return {k: mask_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v, key) for v in value]
    if isinstance(value, str):
        if SECRET_KEY.search(key) and not key.endswith("_env") and value:
            return MASK
        return _mask_url_password(value)
    return value


def _mask_url_password(text: str) -> str:
    if "://" not in text or "@" not in text:
        return text
    parts = urlsplit(text)
    if parts.password is None:
        return text
    netloc = f"{parts.username}:{MASK}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
