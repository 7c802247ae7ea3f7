"""Listings whose names are never cut: a table when it fits, else one block per item.

A name in a listing (an option, a plugin, a distribution) is something the user types next, so
it must come out whole at any width — `bashgym options sink nemo-jsonl | cat` is 80 columns.
Rich shrinks every column of a table that does not fit, names included (`sink.tool_argume…`),
so the table is used only when the name columns fit whole beside a readable share for the
others; otherwise each item is a block: its names on one line that is never wrapped, then its
other fields wrapped (at spaces) and indented beneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.padding import Padding
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
    if fits(console.width, fields, rows):
        console.print(_table(fields, rows))
    else:
        _blocks(console, fields, rows)


def fits(width: int, fields: Sequence[Field], rows: Sequence[Sequence[str]]) -> bool:
    """Whether a table of `rows` fits `width` with its name columns whole."""
    need = 3 * len(fields) + 1  # rich's box: a border and padding around every cell
    for i, field in enumerate(fields):
        widest = max([len(field.header), *(_longest_line(row[i]) for row in rows)])
        need += widest if field.name else min(widest, MIN_TEXT)
    return need <= width


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _table(fields: Sequence[Field], rows: Sequence[Sequence[str]]) -> Table:
    table = Table()
    for i, field in enumerate(fields):
        widest = max([len(field.header), *(_longest_line(row[i]) for row in rows)])
        if field.name:
            table.add_column(field.header, no_wrap=True, min_width=widest, overflow="ignore")
        else:
            table.add_column(field.header, overflow="fold")
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
        console.print(Padding(details, (0, 0, 0, 4), expand=False))
