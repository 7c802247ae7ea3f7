"""What a user can set for the bubblewrap environment: the shared limits plus network and hiding."""

from __future__ import annotations

from bashgym_environments_local import SandboxOptions
from pydantic import Field

from bashgym_environments_bubblewrap.sandbox import HIDDEN


class BubblewrapOptions(SandboxOptions):
    network: bool = Field(
        default=False,
        description="Network access: false gives each command its own network namespace with "
        "only a loopback; true shares the host's network (and its /run).",
    )
    hide: list[str] = Field(
        default_factory=lambda: list(HIDDEN),
        description="Paths hidden inside the sandbox (a folder becomes an empty tmpfs, a file "
        "an unreadable /dev/null); `~` is the user's home. Default: credentials of common "
        "tools (~/.ssh, ~/.aws, ~/.config/gh, ~/.claude, ...) and the docker socket.",
    )
    writable: list[str] = Field(
        default_factory=list,
        description="More folders a command may write to, bound at their own path (e.g. a "
        "tool's config or cache folder); each must exist.",
    )
    bwrap: str = Field(default="bwrap", description="The bwrap program: a name on PATH, or a path.")
