"""`bashgym run` (a default plugin): the command line's front end to the kernel's run engine.

The kernel runs a RunSpec (`bashgym.engine.execute`); this plugin turns flags and a run file
into one and says on the terminal how the run ended. It loads by default, so a narrowed
BASHGYM_LOAD_PLUGINS keeps it, and its `run` is mounted before any other plugin's commands.
The run file and `--set` grammar and `resolve_spec`, which other commands share, live in the
CLI library (`bashgym_cli.runs`).
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_commands_run.command import RUN_HELP, run_command


@hookimpl
def register_commands(app):
    app.command("run", help=RUN_HELP)(run_command)
