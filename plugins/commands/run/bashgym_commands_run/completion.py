"""Shell completion of plugin names for the run's role flags (`-k <TAB>` lists the sinks).

Completing a name loads the plugins (the registry is where names live); completing a command
name does not (the CLI's cached command index answers that).
"""

from __future__ import annotations

from collections.abc import Callable

from bashgym.plugins import current_host


def names_of(kind: str) -> Callable[[str], list[str]]:
    """A Typer `autocompletion` callback: the registered names of `kind` that start with what
    was typed."""

    def complete(incomplete: str) -> list[str]:
        try:
            names = current_host().registry.names(kind)
        except Exception:  # noqa: BLE001 -- completion must never print a traceback into a shell
            return []
        return [name for name in names if name.startswith(incomplete)]

    return complete
