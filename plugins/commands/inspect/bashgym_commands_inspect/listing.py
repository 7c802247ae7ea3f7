"""Listings whose names are never cut and whose words are never split: a table when it fits,
else one block per item.

A name in a listing (an option, a plugin, a distribution) is something the user types next, so
it must come out whole at any width — `bashgym options sink nemo-jsonl | cat` is 80 columns.
The other cells wrap at spaces, and a word in them (a default like `"instruction-response"`, a
path) is copied too, so it must not be split either. Rich shrinks the widest columns of a table
that does not fit to equal widths, with no regard to the words in them (`"instruction-res` /
`ponse"`), so the widths are chosen here: every name column at its widest, every other column
at least its longest word; when that does not fit, each item is a block: its names on one line
that is never wrapped, then its other fields wrapped (at spaces) and indented beneath, where only
a single word longer than the whole line is folded. No line ends in spaces (`| cat` into a file
or a diff shows them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

MIN_TEXT = 16  # the narrowest a wrapped (non-name) column may get before blocks read better


@dataclass(frozen=True)
class Field:
    """One column of a listing. `name`: typed by the user, never wrapped or cut."""

    header: str
    name: bool = False


def print_listing(console: Console, fields: Sequence[Field], rows: Sequence[Sequence[str]]) -> None:
    """Print `rows` (plain text cells, no markup) as a table if it fits, else as blocks."""
    widths = column_widths(console.width, fields, rows)
    if widths is not None:
        print_trimmed(console, _table(fields, rows, widths))
    else:
        _blocks(console, fields, rows)


def fits(width: int, fields: Sequence[Field], rows: Sequence[Sequence[str]]) -> bool:
    """Whether a table of `rows` fits `width` with its names and words whole."""
    return column_widths(width, fields, rows) is not None


def column_widths(
    width: int, fields: Sequence[Field], rows: Sequence[Sequence[str]]
) -> list[int] | None:
    """Each column's text width in a table of `width` columns, or None when it does not fit.

    A name column gets its widest cell; any other column at least its longest word (and
    MIN_TEXT, or its widest cell when narrower), then the room left goes to the widest of them
    first, as rich would share it, so that short columns stay whole and long ones wrap."""
    room = width - (3 * len(fields) + 1)  # rich's box: a border and padding around every cell
    widest = [max([len(f.header), *(_longest_line(row[i]) for row in rows)]) for i, f in
              enumerate(fields)]  # fmt: skip
    floor = [
        widest[i]
        if field.name
        else min(widest[i], max(MIN_TEXT, _longest_word(field.header, rows, i)))
        for i, field in enumerate(fields)
    ]
    if sum(floor) > room:
        return None
    if sum(widest) <= room:
        return widest
    level = max(widest)  # the widest any shrunk column may be: lowered until the table fits
    while sum(_capped(widest, floor, level)) > room:
        level -= 1
    widths = _capped(widest, floor, level)
    for i in range(len(widths)):  # what is left (fewer columns than at the level): one each
        if sum(widths) < room and widths[i] < widest[i]:
            widths[i] += 1
    return widths


def _capped(widest: list[int], floor: list[int], level: int) -> list[int]:
    return [min(w, max(f, level)) for w, f in zip(widest, floor, strict=True)]


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _longest_word(header: str, rows: Sequence[Sequence[str]], i: int) -> int:
    """The longest run of non-spaces in column `i`: rich wraps at spaces, so a column at
    least this wide never splits a word."""
    return max(len(word) for text in (header, *(row[i] for row in rows)) for word in
               [*text.split(), ""])  # fmt: skip


def _table(fields: Sequence[Field], rows: Sequence[Sequence[str]], widths: list[int]) -> Table:
    table = Table()
    for field, width in zip(fields, widths, strict=True):
        # a fixed width: rich keeps it (the total fits); "fold" only breaks a word that is
        # longer than the column, which these widths leave none of
        table.add_column(field.header, width=width, no_wrap=field.name, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _blocks(console: Console, fields: Sequence[Field], rows: Sequence[Sequence[str]]) -> None:
    names = [i for i, f in enumerate(fields) if f.name]
    for n, row in enumerate(rows):
        if n:
            console.print()
        head = Text("  ".join(row[i] for i in names if row[i]), style="bold")
        console.print(head, soft_wrap=True)  # soft_wrap: the line is written whole, never cut
        details = Table.grid(padding=(0, 1))
        details.add_column(no_wrap=True, style="dim")
        details.add_column(overflow="fold")  # wraps at spaces; only a word wider than a line folds
        for i, field in enumerate(fields):
            if i not in names and row[i]:
                details.add_row(f"{field.header}:", Text(row[i]))
        print_trimmed(console, Padding(details, (0, 0, 0, 4), expand=False))


def print_trimmed(console: Console, renderable: RenderableType) -> None:
    """Print `renderable` at the console's width with no spaces at the ends of its lines.

    Rich pads every cell of a grid, and the line of wrapped text, to its width: invisible on a
    terminal, but trailing spaces in `| cat` output, a file or a diff."""
    lines = console.render_lines(renderable, console.options, pad=False)
    trimmed = [segment for line in lines for segment in [*_rstrip(line), Segment.line()]]
    console.print(Segments(trimmed), soft_wrap=True)  # soft_wrap: the lines as rendered


def _rstrip(line: list[Segment]) -> list[Segment]:
    segments = list(line)
    while segments and not segments[-1].control and not segments[-1].text.rstrip():
        segments.pop()
    if segments and not segments[-1].control:
        last = segments[-1]
        segments[-1] = Segment(last.text.rstrip(), last.style)
    return segments
