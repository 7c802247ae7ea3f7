"""The `bashgym` command line (Typer): the kernel's front end for people, installed with it.

The kernel is a library (a web UI or a scheduler would call `bashgym.engine.execute` the same
way); this distribution is the shell around it: the `bashgym` executable, every sub-command
mounted from a plugin's `register_commands` (`run` included: bashgym-commands-run), and the
console helpers commands share (`fail`, `err`, `out`, `report_broken_plugins`, `load_plugin`,
`non_finite` for `--set` values), and `bashgym_cli.runs`: the run file and `--set` grammar and
`resolve_spec`, how a command turns them into a checked run.

It starts at once (the simonw/llm way): `--version` imports neither Typer nor any plugin;
`--help`, completion and the command names come from a cached index (`index.py`), and a
command's plugins are loaded only when one is run. So this module imports nothing heavy: the
helpers above live in `app.py` (Typer, rich and the kernel's contracts: about 0.15 s measured
with `-X importtime`) and are imported on first use through `__getattr__` (PEP 562), so
`from bashgym_cli import fail` works as before.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any

from bashgym import __version__
from bashgym_cli.hardening import make_undumpable

if TYPE_CHECKING:
    from bashgym_cli.app import build_app, err, fail, out, report_broken_plugins
    from bashgym_cli.loading import load_plugin
    from bashgym_cli.values import non_finite

_LAZY = {
    "build_app": "bashgym_cli.app",
    "err": "bashgym_cli.app",
    "fail": "bashgym_cli.app",
    "out": "bashgym_cli.app",
    "report_broken_plugins": "bashgym_cli.app",
    "load_plugin": "bashgym_cli.loading",
    "non_finite": "bashgym_cli.values",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bashgym_cli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def main() -> None:
    make_undumpable()  # before any key is used: see hardening.py
    # SIGTERM and SIGHUP end a run like Ctrl-C: its status is recorded, its servers stopped.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    if sys.argv[1:] == ["--version"]:  # what Typer's eager --version prints, without Typer
        print(f"bashgym {__version__}")
        return
    try:  # a stop before the command's own handling (its imports): one line, not a traceback
        from bashgym_cli.index import lazy_app  # Typer and the index: not needed for --version

        app = lazy_app()
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}) before the command started", file=sys.stderr)
        raise SystemExit(130) from None
    app()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


__all__ = [
    "build_app",
    "err",
    "fail",
    "load_plugin",
    "main",
    "non_finite",
    "out",
    "report_broken_plugins",
]
