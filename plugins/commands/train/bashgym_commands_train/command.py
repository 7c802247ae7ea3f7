"""`bashgym train RUN_DIR --trainer NAME [--set trainer.KEY=VALUE] [--out DIR]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import fail, out
from bashgym_cli.runs import parse_value
from pydantic import BaseModel, ValidationError

from bashgym.contracts import InputError, RunStopped, Trained
from bashgym.plugins import current_host
from bashgym.registry import Registered, UnknownNameError
from bashgym.settings import SettingsError, load_settings
from bashgym.text import condense, explain_validation


def options_from(
    model: type[BaseModel], assignments: list[str], trainer: str | None = None
) -> BaseModel:
    """The trainer's options from `trainer.KEY=VALUE` items; InputError (one line) when bad,
    worded as `run` words a step's: `trainer 'trl': max_step: unknown option (did you mean
    'max_steps'?). Valid options: ...`, so a typo is fixed without a second command. The line
    starts with the trainer, not `--set`: the error line is condensed, which strips a leading -."""
    where = f"trainer {trainer!r}" if trainer else "trainer"
    given: dict[str, Any] = {}
    for item in assignments:
        target, sep, raw = item.partition("=")
        role, _, key = target.strip().partition(".")
        if not sep or role != "trainer" or not key or "." in key:
            raise InputError(
                f"{where}: --set {item!r}: expected trainer.KEY=VALUE (e.g. trainer.max_steps=20)"
            )
        given[key] = parse_value(raw.strip())
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        why = explain_validation(exc, known=model.model_fields)
        valid = ", ".join(model.model_fields) or "none"
        raise InputError(f"{where}: {why}. Valid options: {valid}") from None


def train_command(
    run_dir: Annotated[
        Path | None,
        typer.Argument(metavar="RUN_DIR", help="A run directory whose sink wrote train.jsonl."),
    ] = None,
    trainer: Annotated[
        str,
        typer.Option(
            "--trainer",
            "-t",
            help="Trainer plugin: trl (local LoRA), "
            "nemo-customizer (a NeMo Customizer job), or another installed one.",
        ),
    ] = "trl",
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="trainer.KEY=VALUE: one of the trainer's options (repeat)."),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where the adapter and report go "
            "(default: RUN_DIR/train-TRAINER). Run again to resume.",
        ),
    ] = None,
    list_options: Annotated[
        bool, typer.Option("--options", help="List the trainer's options (--set keys) and exit.")
    ] = False,
) -> None:
    """Fine-tune the student on RUN_DIR's chat / tool-use JSONL; write a servable adapter.

    The run must have written chat or tool-use JSONL (`--sink nemo-jsonl`). The same command
    again resumes a killed training from its last checkpoint. Then point the student at
    the adapter folder (bashgym.toml, table models.student): provider = "embedded" and
    model = "RUN_DIR/train-trl/adapter"; the runtime serves the adapter's base with it, and
    `bashgym models check student` answers through it.
    """
    host = current_host()
    try:
        found = host.registry.get("trainers", trainer)
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    if list_options:
        show_options(found)
        return
    if run_dir is None:
        raise fail("RUN_DIR is missing: the run directory to train on (see --help)")
    try:  # whole, not condensed: the list of valid options is the fix, cut it would mislead
        options = options_from(found.obj.Options, sets or [], trainer)
    except InputError as exc:
        raise fail(str(exc)) from None
    if why := nothing_to_train(run_dir):
        raise fail(f"{run_dir}: {why}")
    target = out_dir or run_dir / f"train-{trainer}"
    made = not target.exists()
    try:
        settings = load_settings()
        trained = found.obj.train(run_dir, target, options, settings)
    except (InputError, SettingsError) as exc:
        _drop_if_empty(target, made)
        raise fail(message(exc)) from None
    except RunStopped as exc:  # a remote job failed, or outlasted the wait: the same command
        _drop_if_empty(target, made)
        raise fail(message(exc), code=1) from None  # again follows it
    show(trained)


def nothing_to_train(run_dir: Path) -> str | None:
    """Why a run that wrote training JSONL has nothing to train on (its nemo-jsonl sink kept no
    row), else None: "run it with --sink nemo-jsonl" would send the user to what they did."""
    try:
        summary = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # the trainer says what is wrong with the folder
    counts = summary.get("counts") if isinstance(summary, dict) else None
    kept = counts.get("kept_by_sink") if isinstance(counts, dict) else None
    if isinstance(kept, dict) and kept.get("nemo-jsonl") == 0:
        return (
            "the run kept no rows for training (its nemo-jsonl sink wrote 0 lines: see the "
            "drops in run.json or report.html)"
        )
    return None


def _drop_if_empty(target: Path, made: bool) -> None:
    """A failed start leaves no empty --out folder behind (one this command made)."""
    if made and target.is_dir() and not any(target.iterdir()):
        target.rmdir()


def message(exc: Exception) -> str:
    """The error's own words on one line: these errors are written for the user, so the Python
    class name (`InputError: ...`) would only be noise in front of them."""
    return condense(str(exc).splitlines()) or "the trainer stopped without saying why"


def show(trained: Trained) -> None:
    out.print(f"[green]adapter[/] {trained.adapter}", highlight=False)
    if trained.report:
        out.print(f"[green]report[/]  {trained.report}", highlight=False)
    if trained.metrics:
        out.print(json.dumps(trained.metrics, indent=1, default=str), highlight=False)


def show_options(found: Registered) -> None:
    """The trainer's options exactly as `bashgym options trainer NAME` lists them (schema types,
    a Literal's allowed values, JSON defaults, meanings): one listing, so the two never drift."""
    from bashgym_commands_inspect.commands import options_command

    options_command("trainer", found.name)
