"""`bashgym run` (a default plugin): the command line's front end to the kernel's run engine.

The kernel runs a RunSpec (`bashgym.engine.execute`); this plugin turns flags and a run file
into one and says on the terminal how the run ended. It loads by default, so a narrowed
BASHGYM_LOAD_PLUGINS keeps it, and its `run` is mounted before any other plugin's commands.
Declared API: `resolve_spec`, how any command turns flags into a checked run (one red line and
exit 2 for every mistake), as the pipeline commands do; `load_run_file` and `apply_sets`, the
run file and `--set` grammar it reads.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_commands_run.command import resolve_spec, run_command
from bashgym_commands_run.spec import apply_sets, load_run_file

__all__ = ["apply_sets", "load_run_file", "resolve_spec"]


@hookimpl
def register_commands(app):
    app.command("run")(run_command)
