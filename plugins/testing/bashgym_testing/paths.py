"""Paths for the tests of file-reading sources."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

O = TypeVar("O", bound=BaseModel)  # noqa: E741 -- an options model, as in the kernel


def options_with_path_gone(model: type[O], path: Path, content: str | None = None) -> O:
    """`model(path=…)` validated while `path` is there (a folder, or a file holding `content`),
    then `path` removed: a run resolved before its input vanished, which the source's own
    open() must still refuse in its own words (its options check passed long before)."""
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    options = model(path=str(path))
    path.rmdir() if content is None else path.unlink()
    return options
