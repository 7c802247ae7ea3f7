"""`bashgym sandbox run`: one command the way an agent's would run, with its exit code, output and
why it stopped: to try an environment, to see what a command does in it, or to check by hand
that an attack is contained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from bashgym_cli import err, fail

from bashgym import hookimpl
from bashgym.contracts import InputError
from bashgym.plugins import current_host
from bashgym_commands_sandbox.running import (
    EXIT_STOPPED,
    choose,
    command_text,
    finite_seconds,
    parse_sets,
    run_one,
    workspace_for,
)

__all__ = ["EXIT_STOPPED", "register_commands"]

RUN_HELP = "\n\n".join(
    [
        "Run one command the way an agent's command runs, and say how it ended.",
        "The command runs with bash -c in a workspace folder, inside an environment: bubblewrap "
        "where it works here (no network, only the workspace writable, its own PID namespace), "
        "else local (limits and a scrubbed environment, but files outside the workspace are not "
        "protected; a note says so). Its output is printed as it was kept (the head and tail of "
        "a long one), then one line on stderr: the environment, why it stopped, how long it took.",
        f"Exit code: the command's own; {EXIT_STOPPED} when the sandbox stopped it (timeout, a "
        "flood of output, a signal); 2 for a problem with these options.",
        "One argument after -- is a shell command as it stands (quote it: pipes and $VARS work "
        "inside); several are a program and its arguments, quoted for you. Every option of an "
        "environment (see: bashgym options environment local) can be set with --set NAME=VALUE, "
        "VALUE read as JSON when it is JSON.",
        "[bold]Examples[/]",
        "  bashgym sandbox run -- 'ls -la; id; echo $HOME'",
        "  bashgym sandbox run -e local --timeout 5 -- python3 -c 'while True: pass'",
        "  bashgym sandbox run -w scratch -- pip download requests  # fails: no network",
        "  bashgym sandbox run --set network=true --set memory_mb=512 \\\n"
        "      -- curl -sI https://pypi.org",
        "  bashgym sandbox run --explain --json -- 'cat /proc/*/environ'",
    ]
)


def run_command(
    words: Annotated[
        list[str] | None,
        typer.Argument(help="The command, after --.", metavar="-- COMMAND...", show_default=False),
    ] = None,
    environment: Annotated[
        str | None,
        typer.Option(
            "--environment", "-e", help="Where to run it (default: bubblewrap, else local)."
        ),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option(
            "--workdir",
            "-w",
            help="The workspace folder (kept); default: a new temporary one, removed after.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            "-t",
            help="Seconds before it is stopped (default 30).",
            min=0.1,
            callback=finite_seconds,
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="An environment option, NAME=VALUE (repeatable)."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="First say what the environment holds here.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead (exit code kept).")
    ] = False,
) -> None:
    try:
        command = command_text(words or [])
        choice = choose(current_host().registry, environment, parse_sets(sets or []), timeout)
        with workspace_for(workdir) as workspace:
            outcome = run_one(choice, workspace, command)
    except InputError as exc:  # with --json as JSON: a script reading it gets JSON for it too
        raise fail(str(exc), as_json=as_json) from None
    done = outcome.completed
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "environment": choice.name,
                    "workspace": str(outcome.workspace),
                    "command": command,
                    "exit_code": done.exit_code,
                    "reason": done.reason,
                    "output": done.output,
                    "duration_s": done.duration_s,
                    "timed_out": done.timed_out,
                    "truncated": done.truncated,
                    "notes": outcome.notes,
                    "holds": outcome.holds if explain else None,
                },
                indent=2,
            )
        )
        raise typer.Exit(outcome.exit_code)
    if explain:
        for line in outcome.holds:
            err.print(f"[dim]{choice.name} holds[/] {line}", highlight=False, markup=True)
    for note in outcome.notes:
        err.print(f"[yellow]note:[/] {note}", highlight=False)
    typer.echo(done.output, nl=False)
    cut = ", output cut" if done.truncated else ""
    status = f"[bold]{choice.name}[/]: {done.reason} ({done.duration_s:g} s{cut})"
    err.print(status, highlight=False)
    raise typer.Exit(outcome.exit_code)


@hookimpl
def register_commands(app):
    sandbox = typer.Typer(
        help="Run commands the way an agent's commands run (see: bashgym sandbox run --help).",
        no_args_is_help=True,
    )
    sandbox.command(
        "run",
        help=RUN_HELP,
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(run_command)
    app.add_typer(sandbox, name="sandbox")
