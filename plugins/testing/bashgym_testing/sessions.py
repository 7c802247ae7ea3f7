"""An environment session without an environment, for testing executors.

`PlainSession(files)` runs commands as plain children in the workspace (the `local`
environment's contract, without its limits or scrubbed environment): enough to drive an
executor in a test; tests of sandboxing use the real environment plugins.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import bashgym_procs as procs

from bashgym.contracts import EnvironmentSession


class PlainSession(EnvironmentSession):
    """Commands as plain children in the workspace; `argv` passes the caller's environment."""

    name = "plain"

    async def run(self, command: str, *, timeout: float | None = None) -> procs.Completed:
        return await procs.run(["bash", "-c", command], cwd=self.workspace.root, timeout=timeout)

    def argv(self, argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return list(argv), dict(os.environ)
