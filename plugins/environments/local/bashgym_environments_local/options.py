"""What a user can set for `local`: the shared sandbox limits plus the network switch."""

from __future__ import annotations

from bashgym_sandbox import SandboxOptions
from pydantic import Field


class LocalOptions(SandboxOptions):
    network: bool = Field(
        default=True,
        description="Network access. true: the host's network (an agent run here reaches its "
        "model); false: none, through `unshare --net` (only a loopback), or the session "
        "refuses to open where that cannot be done.",
    )
