"""Agent file operations stay inside the workspace: `..`, absolute paths and symlinks out are
refused with a message the model can read; the operations do what their names say."""

from __future__ import annotations

import os

import pytest
from bashgym_sandbox import Workspace

from bashgym.contracts import PathError


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path, root / "escape")
    os.symlink(root / "pkg" / "a.py", root / "inside-link.py")
    return Workspace(root)


@pytest.mark.parametrize("path", ["../secret.txt", "pkg/../../secret.txt", "escape/secret.txt"])
def test_paths_that_leave_are_refused(ws, tmp_path, path):
    with pytest.raises(PathError, match="outside the workspace"):
        ws.read(path)
    with pytest.raises(PathError, match="outside the workspace"):
        ws.write(path, "x")
    assert (tmp_path / "secret.txt").read_text() == "outside"


def test_absolute_paths_count_only_inside(ws, tmp_path):
    assert ws.read(str(ws.root / "pkg" / "a.py")).startswith("def f")
    with pytest.raises(PathError):
        ws.read(str(tmp_path / "secret.txt"))
    with pytest.raises(PathError):
        ws.listing("/")


def test_read_write_edit_listing_search(ws):
    assert ws.read("inside-link.py", offset=1, limit=1) == "    return 1\n"
    assert ws.write("new/b.py", "x = 1\nx = 1\n").startswith("wrote 12 bytes")
    with pytest.raises(PathError, match="occurs 2 times"):
        ws.edit("new/b.py", "x = 1", "x = 2")
    assert "replaced 2" in ws.edit("new/b.py", "x = 1", "x = 2", replace_all=True)
    with pytest.raises(PathError, match="not found"):
        ws.edit("new/b.py", "nothing", "y")
    listing = ws.listing(".").splitlines()
    assert "pkg/" in listing and "pkg/a.py" in listing and "new/b.py" in listing
    assert ws.search(r"return \d", path="pkg", glob="*.py") == "pkg/a.py:2: return 1"
    assert "secret" not in ws.search("outside")  # the symlink out is not followed
    with pytest.raises(PathError, match="invalid regex"):
        ws.search("(")


def test_binary_and_huge_files_are_not_dumped(tmp_path):
    ws = Workspace(tmp_path, max_read=100)
    (tmp_path / "blob").write_bytes(b"\0\1\2" * 10)
    (tmp_path / "big.txt").write_text("y\n" * 500)
    with pytest.raises(PathError, match="binary"):
        ws.read("blob")
    assert ws.read("big.txt").endswith("[... file cut at 100 bytes ...]\n")
