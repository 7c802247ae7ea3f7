"""`bashgym orchestrate … --help` at 80 columns, piped (QA: `source.executor_option…` cut with
"…", prose wrapped raggedly, example comments wrapped under the commands). The real executable
renders it; every word of each help text must come out whole (rich wraps at spaces and cuts a
word wider than its column with "…"), and every example on one line of its own."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from bashgym_cli import build_app

from bashgym.plugins import PluginHost


def help_texts(*path: str) -> list[str]:
    """The help of the command at `path` and of each of its parameters."""
    command: Any = typer.main.get_command(build_app(PluginHost()))
    for name in path:  # typer's own click (a vendored copy): its Context, not click's
        command = command.get_command(command.context_class(command), name)
    return [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]


def words(text: str) -> set[str]:
    """The words a user reads (rich markup out, `\\[` as the `[` it shows)."""
    return set(re.sub(r"\[/?bold\]|\[/\]", "", text).replace("\\[", "[").split())


@pytest.mark.parametrize("path", [("orchestrate",), ("orchestrate", "plan"),
                                  ("orchestrate", "run")])  # fmt: skip
def test_orchestrate_help_is_whole_at_80_columns(bashgym_cli, path):
    result = bashgym_cli.subprocess(*path, "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    shown = result.stdout
    assert "…" not in shown, shown
    tokens = set(shown.replace("│", " ").split())
    texts = help_texts(*path)
    cut = sorted(w for text in texts for w in words(text) if w not in tokens)
    assert not cut, f"not whole at 80 columns: {cut}\n{shown}"
    lines = [line.strip() for line in shown.splitlines()]
    for example in (line.strip() for line in texts[0].splitlines()):
        if example.startswith("bashgym "):  # with its comment, on one line of its own
            assert example in lines, (example, shown)
    for paragraph in texts[0].split("\n\n"):  # rich keeps a prose line break: ragged lines
        if not paragraph.startswith("  "):  # not an example block
            assert "\n" not in paragraph.strip(), paragraph
    if path[-1] == "run":
        assert "--set source.executor_options.max_turns=20" in shown
