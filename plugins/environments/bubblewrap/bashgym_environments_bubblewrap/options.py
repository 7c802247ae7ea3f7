"""What a user can set for the bubblewrap environment: the shared limits plus network and hiding."""

from __future__ import annotations

from bashgym_sandbox import SandboxOptions
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
        "an unreadable /dev/null); `~` is each of the user's homes, shell globs are expanded. "
        "Default: /etc/shadow, /etc/gshadow and the SSH host keys; credentials and histories "
        "of common tools (~/.ssh, ~/.aws, ~/.config, ~/.claude, ~/.bash_history, ...); the "
        "docker socket. Everything else outside stays readable.",
    )
    writable: list[str] = Field(
        default_factory=list,
        description="More folders a command may write to, bound at their own path (e.g. a "
        "tool's config or cache folder); each must exist.",
    )
    disk_mb: int | None = Field(
        default=1024,
        ge=1,
        description="MB a session's commands may add to its workspace and /tmp together "
        "(measured as `du` does, looked at every 0.5 s and at each command's end): past it "
        "and still growing, what runs is stopped; while over it, a program starts with no "
        "file able to grow (removing files still works), and each command's reason says so. "
        "It can go over by what is written in one interval; `writable` folders are not "
        "counted. None: no limit.",
    )
    bwrap: str = Field(default="bwrap", description="The bwrap program: a name on PATH, or a path.")
