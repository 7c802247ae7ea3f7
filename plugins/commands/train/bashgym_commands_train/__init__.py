"""BashGym command `train`: fine-tune the student on a run's rows with a trainer plugin.

The command knows no trainer: it finds the one named by `--trainer` in the registry (`trl`,
`nemo-customizer`, any other plugin's), checks its `--set trainer.KEY=VALUE` options against
the trainer's own options model before anything starts, and prints where the adapter is and
how to serve it as the student.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_commands_train.command import options_from, train_command

__all__ = ["options_from", "train_command"]


@hookimpl
def register_commands(app):
    app.command("train")(train_command)
