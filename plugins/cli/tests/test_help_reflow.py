"""Help text fills the terminal's width (QA: at 80 columns `run --help`, `train --help`,
`pipeline --help` ... showed a docstring's 100-column source lines, each wrapped again by rich:
a full line, then a line of one or two words, down every paragraph), and what is deliberate
stays: paragraphs, list items, indented examples.

A break in prose is checked exactly: rich wraps greedily, so a line followed by more of its
paragraph is either full (the next word did not fit) or a source line break that survived."""

from __future__ import annotations

import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import typer
from bashgym_cli.app import build_app
from bashgym_cli.helptext import reflow
from rich.cells import cell_len
from rich.text import Text
from typer.testing import CliRunner

from bashgym.plugins import PluginHost

WIDTHS = (80, 120)
# what QA ran at 80 columns, through the real executable (its cached index lists the commands);
# the in-process test below covers every command (each start here loads its plugin: 2-5 s)
REAL = [[], ["run"], ["pipeline"], ["pipeline", "list"], ["train"], ["sandbox", "run"]]


def command_tree(host: PluginHost) -> dict[tuple[str, ...], Any]:
    """Every command and group of the CLI, by argv, as click holds them."""
    found: dict[tuple[str, ...], Any] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found[path] = command
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(build_app(host)), ())
    return found


def verbatim_lines(help_text: str) -> list[str]:
    """The help's indented lines (examples, code), as shown: markup out, indent kept."""
    plain = Text.from_markup(help_text).plain
    return [line.rstrip() for line in plain.splitlines() if line[:1] in " \t" and line.strip()]


def first_word(line: str) -> str:
    return line.split()[0]


def ragged_breaks(screen: str, width: int, verbatim: list[str]) -> list[tuple[str, str]]:
    """Pairs of lines where the second goes on with the first's text (same indent; not an
    example's line) though its first word would have fit at the end of the first:

    - the help's text (between the usage line and the first panel): rich prints it one column
      in from each side, so `width - 2` columns;
    - a Commands panel's description column: continuation rows leave the name column blank;
      the column ends 1 column before the panel's right border (measured: the longest
      description line there ends so)."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    text = [line.rstrip()[1:] for line in lines[start:end]]
    starts = {v.strip() for v in verbatim}
    bad = []
    for a, b in itertools.pairwise(text):
        if not a.strip() or not b.strip() or _indent(a) != _indent(b):
            continue
        if any(v.startswith(b.strip()) or b.strip().startswith(v) for v in starts):
            continue  # an example's line: kept as written
        if cell_len(a) + 1 + cell_len(first_word(b)) <= width - 2:
            bad.append((a, b))
    for panel in _panels(lines, "Commands"):
        inner = [row[1:-1] for row in panel]
        column = re.match(r" \S+\s+", inner[0]).end()  # type: ignore[union-attr]
        room = len(inner[0]) - column - 1
        for a, b in itertools.pairwise(inner):
            if b[:column].strip():  # the next command's row
                continue
            if cell_len(a[column:].rstrip()) + 1 + cell_len(first_word(b)) <= room:
                bad.append((a, b))
    return bad


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _panels(lines: list[str], title: str) -> list[list[str]]:
    """The rows of each panel whose title is `title`, borders and all but the top and bottom."""
    panels, rows = [], None
    for line in lines:
        if line.startswith("╭") and f" {title} " in line:
            rows = []
        elif line.startswith("╰") and rows is not None:
            panels.append(rows)
            rows = None
        elif rows is not None:
            rows.append(line.rstrip())
    return panels


def assert_fills_the_width(screen: str, width: int, help_text: str, where: str) -> None:
    verbatim = verbatim_lines(help_text)
    bad = ragged_breaks(screen, width, verbatim)
    assert not bad, f"{where} at {width} columns: a line ends early:\n{bad}\n{screen}"
    shown = [line.rstrip()[1:] for line in screen.splitlines()]
    for example in verbatim:
        if cell_len(example) <= width - 2:  # one that fits is on a line of its own, indent kept
            assert example in shown, f"{where} at {width}: {example!r} not whole\n{screen}"


def test_every_help_fills_80_and_120_columns_and_keeps_its_examples(bashgym_env, bashgym_host):
    """Every command, group and sub-command of the CLI (in-process: the same app `main` runs)."""
    tree = command_tree(bashgym_host)
    assert ("orchestrate", "run") in tree and ("sandbox", "run") in tree and len(tree) > 20
    runner = CliRunner()
    for path, command in tree.items():
        for width in WIDTHS:
            result = runner.invoke(
                build_app(bashgym_host), [*path, "--help"], env={"COLUMNS": str(width)}
            )
            assert result.exit_code == 0, (path, result.output)
            assert_fills_the_width(result.stdout, width, command.help or "", " ".join(path))


def test_the_real_executable_fills_the_width(bashgym_cli, bashgym_host):
    """`bashgym ... --help` as QA ran it: the real console script (its lazy index included)."""
    tree = command_tree(bashgym_host)
    runs = [(path, width) for path in REAL for width in WIDTHS]

    def shown(run: tuple[list[str], int]) -> Any:
        return bashgym_cli.subprocess(*run[0], "--help", env={"COLUMNS": str(run[1])})

    first = shown(runs[0])  # the first start builds the index (every plugin); the rest read it
    with ThreadPoolExecutor(4) as pool:
        results = [first, *pool.map(shown, runs[1:])]
    for (path, width), result in zip(runs, results, strict=True):
        assert result.exit_code == 0, (path, result.output)
        where = "bashgym " + " ".join(path)
        assert_fills_the_width(result.stdout, width, tree[tuple(path)].help or "", where)
    run_80 = results[runs.index((["run"], 80))].stdout
    # an example's `\` continuation keeps its deeper indent under the line it continues
    assert "   bashgym run -s files --set source.path=tasks.csv -k nemo-jsonl \\" in run_80
    assert "       --router confidence --set router.student=student \\" in run_80
    listing = results[runs.index((["pipeline", "list"], 80))].stdout
    assert "\n   bashgym pipeline list --json | jq '.[].columns'" in listing, listing


def test_every_commands_examples_fit_80_columns(bashgym_env, bashgym_host):
    """An example wider than the terminal is wrapped by rich at a space, its tail at the left
    edge like prose (`sandbox run`'s `curl -sI` / `https://pypi.org`, `serve`'s `# needs a
    GPU`): every command's examples are 78 columns at most (the help's text is 2 in from the
    edges), a long one split with `\\`."""
    wide = {
        " ".join(path): line
        for path, command in command_tree(bashgym_host).items()
        for line in verbatim_lines(command.help or "")
        if cell_len(line) > 78
    }
    assert not wide, wide


def test_the_check_finds_a_docstring_wrapped_at_100_columns(bashgym_env):
    """The check above, on a help as it was: source lines of ~90 columns shown at 80."""
    app = typer.Typer(rich_markup_mode="rich")

    @app.command()
    def cmd() -> None:
        """Summary.

        Builds the config as bashgym run would (seed from the source, else the pipeline's
        example seed; judges' columns added), compiles it with DataDesigner and checks that.
        """

    @app.command()
    def other() -> None:
        """Other."""

    help_text = cmd.__doc__ or ""
    screen = CliRunner().invoke(app, ["cmd", "--help"], env={"COLUMNS": "80"}).stdout
    assert ragged_breaks(screen, 80, []), screen
    app.registered_commands[0].help = reflow(help_text)
    screen = CliRunner().invoke(app, ["cmd", "--help"], env={"COLUMNS": "80"}).stdout
    assert not ragged_breaks(screen, 80, []), screen


# ---- reflow itself


def test_prose_lines_join_and_paragraphs_stay():
    text = "Summary\ngoes on.\n\nFirst paragraph\nwraps here\n  \nSecond one."
    assert reflow(text) == "Summary goes on.\n\n\nFirst paragraph wraps here\n\nSecond one."


def test_indented_lines_list_items_and_b_blocks_keep_their_lines():
    text = """Summary.

    Examples:

      bashgym run -s files \\
          --set source.path=tasks.csv
      bashgym run x.toml
    Then more prose
    that wraps.

    - an item that is long
      and goes on
    - another
    1. numbered
       continued
    A line after the list.

    \b
    kept
    as is
    """
    assert reflow(text) == (
        "Summary.\n\n\nExamples:\n\n"
        "  bashgym run -s files \\\n      --set source.path=tasks.csv\n  bashgym run x.toml\n"
        "Then more prose that wraps.\n\n"
        "- an item that is long and goes on\n- another\n1. numbered continued\n"
        "A line after the list.\n\n"
        "kept\nas is"
    )


@pytest.mark.parametrize(
    "text",
    [
        "One line.",
        "",
        "Summary.\n\n  only an example",
        "Summary.\n\n[bold]Examples[/]\n\n  bashgym x\n\n  bashgym y",
        "--target teacher-share=0.3: not a\nlist item.",
    ],
)
def test_reflow_of_its_own_output_is_the_same(text):
    assert reflow(reflow(text)) == reflow(text)
