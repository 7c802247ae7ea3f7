"""An environment session without an environment, for testing executors.

`PlainSession(files)` runs commands as plain children in the workspace (the `local`
environment's contract, without its limits or scrubbed environment): enough to drive an
executor in a test; tests of sandboxing use the real environment plugins, through
`SessionProbe(environment, workspace, options)`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bashgym_procs as procs

from bashgym.contracts import EnvironmentSession


class PlainSession(EnvironmentSession):
    """Commands as plain children in the workspace; `argv` passes the caller's environment."""

    name = "plain"

    async def run(self, command: str, *, timeout: float | None = None) -> procs.Completed:
        return await procs.run(["bash", "-c", command], cwd=self.workspace.root, timeout=timeout)

    def argv(self, argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return list(argv), dict(os.environ)


class SessionProbe:
    """Run commands in one real session of `environment` (in this process) and keep what the
    session said about itself (`described`, `notes`, `cage`), for attack tests of any
    environment plugin."""

    def __init__(self, environment: Any, workspace: Path, options: Any) -> None:
        self.environment, self.workspace, self.options = environment, workspace, options

    def run(self, *commands: str, timeout: float | None = None, inspect: Any = None) -> list[Any]:
        """Each command's Completed; `inspect(session)` is called once the session is open."""

        async def go() -> list[Any]:
            async with self.environment.open(self.workspace, self.options) as session:
                self.described, self.notes = session.describe(), session.notes
                self.cage = session.cage
                if inspect is not None:
                    inspect(session)
                return [await session.run(c, timeout=timeout) for c in commands]

        return asyncio.run(go())

    def holds(self, concern: str, words: str) -> bool:
        """Whether the session says `concern: ...words...` about itself."""
        return any(line.startswith(f"{concern}:") and words in line for line in self.described)
