"""BashGym kernel: hooks, records, settings and the run engine; everything else is a plugin."""

from bashgym.hookspecs import hookimpl

__all__ = ["__version__", "hookimpl"]
__version__ = "0.1.0"
