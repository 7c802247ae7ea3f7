"""`out` and `err`, the consoles every command prints through, read the width each time they
print: a COLUMNS set after bashgym_cli was imported takes effect (rich alone keeps the COLUMNS
of the moment the console was made)."""

from __future__ import annotations

import pytest
from bashgym_cli.app import LiveWidthConsole, err, out

WORDS = " ".join(f"word{i:02d}" for i in range(40))  # 279 characters, breakable at spaces


def widest_line(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [40, 100])
def test_out_wraps_at_the_columns_set_when_it_prints(columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    out.print(WORDS)
    printed = capsys.readouterr().out
    assert widest_line(printed) <= columns
    assert widest_line(printed) > columns - len("word00 ")  # filled: this width, not a narrower
    assert out.width == columns


def test_one_console_follows_a_change_of_columns(monkeypatch, capsys):
    for columns in (50, 120, 60):
        monkeypatch.setenv("COLUMNS", str(columns))
        assert (out.width, err.width) == (columns, columns)
        out.print(WORDS)
        err.print(WORDS)
        printed = capsys.readouterr()
        assert widest_line(printed.out) <= columns and widest_line(printed.err) <= columns


def test_a_width_given_stays_fixed(monkeypatch):
    monkeypatch.setenv("COLUMNS", "150")
    fixed = LiveWidthConsole(width=70)
    assert fixed.width == 70
    monkeypatch.setenv("COLUMNS", "90")
    assert fixed.width == 70 and LiveWidthConsole().width == 90
