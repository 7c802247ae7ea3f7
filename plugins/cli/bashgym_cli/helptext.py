"""A command's help text as rich should wrap it: each prose paragraph one line, so it fills the
terminal's width; lists, indented examples and `\\b` blocks keep their lines.

Why our own: typer's "rich" markup mode keeps a help's single line breaks on purpose (its
maintainers' choice, fastapi/typer#964: a line break may be a list), and rich then wraps each
source line again at the width, so a docstring wrapped at 100 columns showed at 80 as one full
line and one of a few words, line after line. The library's other ways do not fit: "markdown"
mode reflows, but drops the rich markup every help here uses (`[bold]Examples[/]`) and joins
the two-space-indented examples into prose (Markdown's code block needs four); no markup mode
loses the rich panels. Click's plain formatter has the rules wanted (join single line breaks,
keep a paragraph marked `\\b`), so this applies them, plus lists and indented lines, once, to
every command's help before typer sees it (`bashgym_cli.app` calls `reflow` on each).

Rules, per paragraph (paragraphs are separated by a blank line and stay separated):
- a paragraph whose first line is `\\b` (click's marker) keeps every line; the marker goes;
- an indented line (an example, a code line, its `\\` continuation) stays as it is, alone;
- a list item (`- `, `* `, `+ `, `• `, `1. `, `1) `) starts a line; a following line indented
  to the item's text (its hanging indent) continues it;
- any other unindented line continues the prose line before it.
"""

from __future__ import annotations

import inspect
import re

BULLET = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+(?=\S)")
PARAGRAPHS = re.compile(r"\n[ \t]*\n")  # one blank line or more (a `\s*` would eat the indent)
VERBATIM = "\b"  # click's "do not rewrap this paragraph" marker, on a line of its own


def reflow(text: str) -> str:
    """`text` (a help: docstring or `help=`) with each paragraph's prose lines joined; see the
    module's docstring for what keeps its lines.

    The summary (first paragraph) is followed by two blank lines where it had one: typer dedents
    the rest of a help with `inspect.cleandoc`, which never counts the first line of what it is
    given, so a rest starting `[bold]Examples[/]` with only indented examples after it lost
    their indentation (`pipeline list`); a blank first line keeps that heading counted. Typer's
    splits on blank lines drop the extra one; `reflow` of its own output gives the same text."""
    paragraphs = [p for p in PARAGRAPHS.split(inspect.cleandoc(text)) if p.strip()]
    joined = [_paragraph(p.strip("\n")) for p in paragraphs]
    if len(joined) < 2:
        return "".join(joined)
    return joined[0] + "\n\n\n" + "\n\n".join(joined[1:])


def _paragraph(paragraph: str) -> str:
    lines = [line.rstrip() for line in paragraph.split("\n")]
    if lines[0].strip() == VERBATIM:
        return "\n".join(lines[1:])
    out: list[str] = []
    hang: int | None = None  # the indent a line continuing the last one has; None: it is alone
    for line in lines:
        indent = len(line) - len(line.lstrip())
        item = BULLET.match(line)
        if out and item is None and hang is not None and indent == hang:
            out[-1] += " " + line.strip()
            continue
        out.append(line)
        hang = item.end() if item else (0 if indent == 0 else None)
    return "\n".join(out)
