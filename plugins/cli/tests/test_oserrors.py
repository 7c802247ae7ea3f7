"""`os_problem` words a failed read or write for every command; here the errno whose words were
worse than a command's own: "File exists" (EEXIST) from making a folder where a file is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bashgym_cli.oserrors import os_problem


def test_a_folder_that_cannot_be_made_because_a_file_is_there_says_so(tmp_path: Path):
    """Before: `'…/out': a file of that name is in the way` (the run command had its own,
    clearer `it is a file, where a folder is needed`: now every command says that)."""
    blocker = tmp_path / "out"
    blocker.write_text("")
    with pytest.raises(OSError) as exc:
        blocker.mkdir(parents=True, exist_ok=True)  # what a sink or an export does first

    assert os_problem(exc.value, with_path=True) == (
        f"'{blocker}': it is a file, where a folder is needed"
    )
    assert os_problem(exc.value) == "it is a file, where a folder is needed"


def test_file_exists_on_two_paths_keeps_the_general_words(tmp_path: Path):
    """A link whose name is taken is not a folder that could not be made."""
    (tmp_path / "a").write_text("")
    (tmp_path / "b").write_text("")
    with pytest.raises(OSError) as exc:
        os.link(tmp_path / "a", tmp_path / "b")

    assert os_problem(exc.value, with_path=True) == (
        f"'{tmp_path / 'b'}': a file of that name is in the way"
    )
