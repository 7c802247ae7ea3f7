"""The Typer app: every sub-command mounted from a plugin's `register_commands` (`run` included:
bashgym-commands-run), and the console helpers commands share (`fail`, `err`, `out`,
`report_broken_plugins`); `bashgym_cli` re-exports them.

Every configuration problem (unknown plugin name, bad option, bad run or settings file) is caught
before any work and printed as one line naming the problem and the valid choices, exit code 2.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from bashgym import __version__
from bashgym.plugins import DEFAULT_PLUGINS, PluginHost, current_host
from bashgym_cli.helptext import reflow


class LiveWidthConsole(Console):
    """A rich Console that reads its width (COLUMNS, else the terminal's) each time it prints.

    rich's `Console(width=None)` does read the size at every print, except that its __init__
    copies COLUMNS (and LINES) of that moment into a fixed width, which then wins. `out` and
    `err` are made once, at import: a later COLUMNS (a test, a program embedding the CLI) was
    never read. A width or height given here stays fixed, as in rich."""

    def __init__(self, **kwargs: Any) -> None:  # keywords only: `width` is told from its name
        super().__init__(**kwargs)
        if kwargs.get("width") is None:
            self._width = None  # the one rich's size property reads at each call
        if kwargs.get("height") is None:
            self._height = None


err = LiveWidthConsole(stderr=True)
out = LiveWidthConsole()


def fail(
    message: str,
    code: int = 2,
    *,
    as_json: bool = False,
    doc: Callable[[str], dict[str, Any]] | None = None,
) -> typer.Exit:
    """One `error:` line; the message is text, never markup (it quotes paths, commands, data).

    `as_json` (a command's `--json`): the error as JSON on stdout instead, so a script reading
    the JSON gets JSON whatever happened: `{"ok": false, "error": message}`, or `doc(message)`
    for a command whose JSON has a shape of its own (validate's `valid` and `problems`). The
    exit code is `code` either way."""
    if as_json:
        error = doc(message) if doc is not None else {"ok": False, "error": message}
        typer.echo(json.dumps(error, indent=2))
        return typer.Exit(code)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def report_broken_plugins(host: PluginHost) -> None:
    """A warning line for each plugin that could not load (a command goes on without it)."""
    for info in host.failures():
        err.print(
            f"[yellow]warning:[/] plugin {info.name!r} is disabled: {info.error}", highlight=False
        )


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"bashgym {__version__}")
        raise typer.Exit()


def build_app(host: PluginHost | None = None) -> typer.Typer:
    """A fresh CLI app with the core commands plus every plugin's `register_commands`."""
    app = root_app()
    _add_plugin_commands(app, host or current_host())
    return app


ROOT_HELP = """Turn coding-agent work into training data, and run that work.

Sources read inputs, pipelines generate rows on NeMo DataDesigner, judges keep or drop them, sinks
write training files. Every part is a plugin: see [bold]bashgym plugins[/]."""


def root_app(cls: type[TyperGroup] | None = None) -> typer.Typer:
    """The root command alone (help, `--version`); `cls` is the click group class Typer makes
    of it (the index's lazy group)."""
    app = typer.Typer(
        cls=cls,
        name="bashgym",
        no_args_is_help=True,
        rich_markup_mode="rich",
        help=reflow(ROOT_HELP),
    )

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option(
                "--version", callback=version_callback, is_eager=True, help="Print the version."
            ),
        ] = False,
    ) -> None:
        pass

    return app


def _add_plugin_commands(app: typer.Typer, host: PluginHost) -> None:
    """Each plugin's commands, built on a scratch app first: a name already taken (a built-in,
    or another plugin's) is refused by name, and a broken hook disables only its plugin. The
    default plugins' commands go first, so no other plugin can take `run` over."""
    impls = host.pm.hook.register_commands.get_hookimpls()
    for impl in sorted(impls, key=lambda impl: impl.plugin_name not in DEFAULT_PLUGINS):
        scratch = typer.Typer()
        info = host.infos.get(impl.plugin_name)
        try:
            impl.function(app=scratch)
        except Exception as exc:  # noqa: BLE001 -- a broken plugin command never breaks the CLI
            if info is not None:
                info.error = f"register_commands failed: {exc}"
            continue
        taken, added, clashes = _command_names(app), [], []
        for item in [*scratch.registered_commands, *scratch.registered_groups]:
            name = _name(item)
            if name in taken:
                clashes.append(name)
                continue
            is_group = item in scratch.registered_groups
            _input_errors_exit_2(item)
            _reflow_help(item)
            (app.registered_groups if is_group else app.registered_commands).append(item)  # type: ignore[arg-type]
            added.append(name)
        if info is not None:
            info.registers["commands"] = sorted(added)
            if clashes:
                info.error = (
                    f"command(s) {', '.join(repr(c) for c in clashes)} refused: the name is "
                    "already taken by a built-in or another plugin"
                )


def _input_errors_exit_2(item: Any) -> None:
    """A plugin command (or each command of a group) ends an `InputError` the way `run` does:
    one red line and exit 2, not a traceback. functools.wraps keeps the signature Typer reads."""
    group = getattr(item, "typer_instance", None)
    if group is not None:
        for sub in [*group.registered_commands, *group.registered_groups]:
            _input_errors_exit_2(sub)
        return
    callback = item.callback
    if callback is None or getattr(callback, "_bashgym_wrapped", False):
        return

    # here, not at the top: the contracts (pydantic, about 0.09 s) are not needed by `--help`
    from bashgym.contracts import InputError

    @functools.wraps(callback)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None

    guarded._bashgym_wrapped = True  # type: ignore[attr-defined]
    item.callback = guarded


def _reflow_help(item: Any) -> None:
    """The help of a plugin command (or of a group and each of its commands) reflowed, so it
    fills the terminal's width (`bashgym_cli.helptext`); read where Typer reads it: the
    explicit help, else the docstring (for a group, typer's own order of the two)."""
    group = getattr(item, "typer_instance", None)
    if group is not None:
        text = typer.main.solve_typer_info_help(item)
        for sub in [*group.registered_commands, *group.registered_groups]:
            _reflow_help(sub)
    else:
        text = item.help if item.help is not None else inspect.getdoc(item.callback)
    if isinstance(text, str) and text:
        item.help = reflow(text)


def _name(item: Any) -> str:
    if getattr(item, "typer_instance", None) is not None:  # a group
        return item.name or ""
    return item.name or (item.callback.__name__.replace("_", "-") if item.callback else "")


def _command_names(app: typer.Typer) -> set[str]:
    return {_name(c) for c in [*app.registered_commands, *app.registered_groups]}
