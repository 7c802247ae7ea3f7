"""One command in one environment, as an agent's would run: the part of `bashgym sandbox run`
that is not the command line (kept apart so it reads, and tests, without Typer)."""

from __future__ import annotations

import asyncio
import json
import math
import shlex
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from bashgym_cli import non_finite
from pydantic import BaseModel, ValidationError

from bashgym.contracts import InputError
from bashgym.records import Completed
from bashgym.registry import Registry, UnknownNameError
from bashgym.runspec import RunConfigError, default_environment
from bashgym.text import explain_validation

EXIT_STOPPED = 124  # the sandbox stopped it (timeout, output flood, a signal), as timeout(1)
PREFERRED = "bubblewrap"


@dataclass
class Choice:
    """The environment a command runs in, its validated options, and why it was picked."""

    name: str
    environment: Any
    options: Any
    notes: list[str] = field(default_factory=list)


def command_text(words: Sequence[str]) -> str:
    """One word is a shell command as it stands (`'ls | wc -l'`); several are an argv, quoted."""
    if not words or not "".join(words).strip():
        raise InputError("give the command to run after --, e.g. bashgym sandbox run -- ls -la")
    return words[0] if len(words) == 1 else shlex.join(words)


def finite_seconds(value: float | None) -> float | None:
    """`--timeout inf` (or nan) would mean no limit at all: refused as Click refuses `abc`."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number of seconds")
    return value


def parse_sets(sets: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs; a VALUE that is JSON (true, 512, ["A"]) is read as JSON, else text.
    An infinite or NaN number (`1e999`, `inf`) is refused by name (see bashgym_cli.values)."""
    values: dict[str, Any] = {}
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item!r}: write KEY=VALUE, e.g. --set memory_mb=512")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if non_finite(value):
            raise InputError(f"--set {item!r}: {raw.strip()} is not a finite number")
        values[key.strip()] = value
    return values


def choose(
    registry: Registry, name: str | None, sets: dict[str, Any], timeout: float | None
) -> Choice:
    """The named environment, or the one runs use (bubblewrap where it works, else local, with
    a note saying why); refused when it cannot run here or its options are wrong."""
    notes: list[str] = []
    try:
        picked = name or default_environment(registry)
        registered = registry.get("environments", picked)
    except (UnknownNameError, RunConfigError) as exc:
        raise InputError(str(exc)) from None
    if name is None and picked != PREFERRED:
        bubblewrap = registry.items["environments"].get(PREFERRED)
        why = bubblewrap.obj.available() if bubblewrap else "its plugin is not installed"
        notes.append(f"{PREFERRED} is not available here ({why}); running in {picked}")
    why_not = registered.obj.available()
    if why_not is not None:
        raise InputError(f"environment {picked!r} cannot run here: {why_not}")
    if timeout is not None:
        sets = {**sets, "timeout_s": timeout}
    model = registered.obj.Options
    try:
        options = model.model_validate(sets)
    except ValidationError as exc:
        raise InputError(f"environment {picked}: {explain_options(exc, model)}") from None
    return Choice(picked, registered.obj, options, notes)


def explain_options(exc: ValidationError, model: type[BaseModel]) -> str:
    """What is wrong with the `--set` options, worded as `run` words a step's: the option and
    the problem, for a name the environment does not have the one meant (when one is close)
    and every valid name, so the fix needs no second command. No model class name
    (`invalid LocalOptions`): the user typed `--set`, not a class."""
    valid = list(model.model_fields)
    text = explain_validation(exc, known=valid)
    if not any(e["type"] == "extra_forbidden" for e in exc.errors()):
        return text
    return f"{text}. Valid options: {', '.join(valid)}"


@contextmanager
def workspace_for(workdir: Path | None) -> Iterator[Path]:
    """`workdir` as it is, or a new temporary folder removed afterwards."""
    if workdir is not None:
        if not workdir.is_dir():
            raise InputError(f"--workdir {workdir}: no such folder")
        yield workdir.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="bashgym-sandbox-") as scratch:
        yield Path(scratch)


@dataclass
class Outcome:
    """What happened, and what the session held while it did."""

    completed: Completed
    workspace: Path
    holds: list[str]
    notes: list[str]

    @property
    def exit_code(self) -> int:
        code = self.completed.exit_code
        return EXIT_STOPPED if code is None else code


def run_one(choice: Choice, workspace: Path, command: str) -> Outcome:
    async def go() -> Outcome:
        async with choice.environment.open(workspace, choice.options) as session:
            done = await session.run(command)
            # describe() and notes are what local and bubblewrap add to the kernel's
            # EnvironmentSession; another environment may lack them
            holds = session.describe() if hasattr(session, "describe") else []
            notes = [*choice.notes, *getattr(session, "notes", [])]
            return Outcome(done, workspace, holds, notes)

    return asyncio.run(go())
