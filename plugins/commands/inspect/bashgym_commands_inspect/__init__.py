"""BashGym inspection commands (a default plugin): `bashgym plugins` lists what is installed and
what each plugin registers, `bashgym options ROLE NAME` shows the options a plugin accepts, and
`bashgym config show` prints the resolved settings with secrets masked.

They read the kernel's plugin host, registry and settings and change nothing, so they are a
plugin like any other; they load by default so a narrowed BASHGYM_LOAD_PLUGINS keeps them.
Declared API: `mask_secrets`, and `print_listing` / `Field` for any command that lists names a
user types (a table when the names fit whole, else one block per item; see `listing`).
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_commands_inspect.masking import mask_secrets

__all__ = ["Field", "mask_secrets", "print_listing"]


def __getattr__(name: str) -> Any:
    # rich's table and text (part of the ~0.19 s below): loaded by a command that lists, not by
    # every process that loads this default plugin
    if name in ("Field", "print_listing"):
        from bashgym_commands_inspect import listing

        return getattr(listing, name)
    raise AttributeError(name)


@hookimpl
def register_commands(app):
    # ~0.19 s on their own (typer, rich, bashgym_cli; measured): imported when the CLI builds its
    # commands, not by every process that loads the plugins (a default plugin)
    import typer

    from bashgym_commands_inspect.commands import config_show, options_command, plugins_command

    app.command("plugins")(plugins_command)
    app.command("options")(options_command)
    config = typer.Typer(help="Inspect settings.", no_args_is_help=True)
    config.command("show")(config_show)
    app.add_typer(config, name="config")
