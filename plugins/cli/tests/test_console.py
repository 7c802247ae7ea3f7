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


def test_fail_with_json_prints_the_error_as_json_on_stdout_only(capsys):
    """`fail(..., as_json=True)`: what `sandbox run`, `validate` and `preview` print for a
    mistake under --json (each had its own few lines): JSON on stdout, nothing on stderr, the
    message as it is (a `[x]` in it is not markup), the exit code kept; `doc` shapes it."""
    import json

    from bashgym_cli.app import fail

    exit_ = fail("bad [x] value", as_json=True)
    printed = capsys.readouterr()
    assert exit_.exit_code == 2 and printed.err == ""
    assert json.loads(printed.out) == {"ok": False, "error": "bad [x] value"}
    assert printed.out == '{\n  "ok": false,\n  "error": "bad [x] value"\n}\n'
    exit_ = fail("no", 3, as_json=True, doc=lambda message: {"valid": False, "problems": [message]})
    assert exit_.exit_code == 3
    assert json.loads(capsys.readouterr().out) == {"valid": False, "problems": ["no"]}
    exit_ = fail("bad [x] value")  # without: the one `error:` line on stderr
    printed = capsys.readouterr()
    assert exit_.exit_code == 2 and printed.out == ""
    assert " ".join(printed.err.split()) == "error: bad [x] value"
