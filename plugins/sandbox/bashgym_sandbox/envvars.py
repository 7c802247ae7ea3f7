"""The environment variables a sandboxed command sees: an allow-list, never the parent's whole set.

BashGym's own process holds API keys (OPENAI_API_KEY, ANTHROPIC_API_KEY, AWS_*, HF_TOKEN, ...)
because it talks to models; a command an agent wrote must see none of them. So nothing passes
unless it is on the list below or the user names it; a glob the user gives never passes a name
that looks like a secret (only that exact name does). HOME is the workspace, so tools that write
to `~` (pip, git config, shell history) write there and not into the user's real home.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

ALLOWED = ("PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "USER", "LOGNAME", "NO_COLOR")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

SECRET_LOOKING = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT|"
    r"^AWS_|^AZURE_|^GOOGLE_|^GCP_|^GH_|^GITHUB_|^HF_|^HUGGING|^OPENAI|^ANTHROPIC|^BASHGYM_",
    re.IGNORECASE,
)


def looks_secret(name: str) -> bool:
    return SECRET_LOOKING.search(name) is not None


def _passes(name: str, patterns: Iterable[str], exact: set[str]) -> bool:
    if name in exact:
        return True
    if looks_secret(name):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def sandbox_env(
    parent: Mapping[str, str],
    *,
    home: str,
    tmpdir: str,
    pass_env: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables for a command: the allowed ones from `parent`, then HOME, TMPDIR, SHELL,
    then `extra` (the user's own settings, which win)."""
    wanted = [*ALLOWED, *pass_env]
    exact = {p for p in pass_env if not any(c in p for c in "*?[")}
    env = {k: v for k, v in parent.items() if _passes(k, wanted, exact)}
    env.setdefault("PATH", DEFAULT_PATH)
    env.update(HOME=home, TMPDIR=tmpdir, SHELL="/bin/bash")
    env.update(extra or {})
    return env
