"""Which `bashgym` commands this installation has: the API runs some (`push`, `orchestrate
...`) as child processes, and answers 501 naming the one that is missing instead of starting a
child that could only fail."""

from __future__ import annotations

import threading
from typing import Any

from bashgym_api.jobs import JobError
from bashgym_api.specs import Plugins


class Commands:
    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins
        self._lock = threading.Lock()
        self._root: Any = None

    def _tree(self) -> Any:
        with self._lock:
            if self._root is None:
                import typer
                from bashgym_cli.app import build_app

                host, _ = self.plugins.get()
                self._root = typer.main.get_command(build_app(host))
            return self._root

    def has(self, path: list[str]) -> bool:
        """True when `bashgym PATH...` is a command here (e.g. ["orchestrate", "plan"])."""
        node = self._tree()
        for name in path:
            commands = getattr(node, "commands", None)
            if not commands or name not in commands:
                return False
            node = commands[name]
        return True

    def require(self, path: list[str]) -> None:
        if not self.has(path):
            raise JobError(
                501, f"`bashgym {' '.join(path)}` is not installed here, so this endpoint cannot "
                "work; install the plugin that adds it",
            )  # fmt: skip
