"""`bashgym run --help` at 80 columns, piped (QA: help text cut with "…", 130 and defaults
missing, prose wrapped raggedly). The real executable renders it; every word of every help text
must come out whole (rich wraps at spaces and cuts with "…" a word wider than its column), and
every example on one line."""

from __future__ import annotations

import re
from typing import Any

import typer
from bashgym_cli import build_app

from bashgym.plugins import PluginHost


def help_texts(*path: str) -> list[str]:
    """The help of the command at `path` (e.g. "run") and of each of its parameters."""
    command: Any = typer.main.get_command(build_app(PluginHost()))
    for name in path:  # typer's own click (a vendored copy): its Context, not click's
        command = command.get_command(command.context_class(command), name)
    return [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]


def words(text: str) -> set[str]:
    """The words a user reads (rich markup out, `\\[` as the `[` it shows)."""
    plain = re.sub(r"\[/?bold\]|\[/\]", "", text).replace("\\[", "[")
    return set(plain.split())


def assert_help_whole(bashgym_cli, *path: str) -> str:
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
        if example.startswith("bashgym "):  # an example: on one line of its own
            assert example in lines, (example, shown)
    for paragraph in texts[0].split("\n\n"):  # rich keeps a prose line break: ragged lines
        if not paragraph.startswith("  "):  # not an example block
            assert "\n" not in paragraph.strip(), paragraph
    return shown


def test_run_help_is_whole_at_80_columns_with_exit_codes_and_defaults(bashgym_cli):
    shown = " ".join(assert_help_whole(bashgym_cli, "run").replace("│", " ").split())
    assert "router.teacher=claude-cli" in shown  # was `router.teacher=claude…`
    assert "130 when it was interrupted (Ctrl-C" in shown
    assert "splits (default: 0)" in shown
    assert "Tasks run at once (default: [tasks] concurrency, 4)" in shown
    assert "judges (default: off)" in shown


def test_run_help_says_x_and_router_go_together(bashgym_cli):
    """-x with --router is valid (the run's executor keeps its executor.* options when the
    router picks it; the router's others get their defaults), and the help says so."""
    shown = " ".join(assert_help_whole(bashgym_cli, "run").replace("│", " ").split())
    assert "With --router: which of its executors gets the --set executor.KEY=VALUE" in shown
    assert (
        "-x may name one of them to give it --set executor.* options (the others run with "
        "their defaults)" in shown
    ), shown


def test_run_names_its_argument_in_upper_case_as_the_help_prose_does(bashgym_cli):
    """`[run_file]` beside the prose's ROLE NAME and other commands' TASK read as two styles."""
    shown = assert_help_whole(bashgym_cli, "run")
    assert "Usage: bashgym run [OPTIONS] [RUN_FILE]" in shown, shown
    assert "run_file" not in shown, shown
