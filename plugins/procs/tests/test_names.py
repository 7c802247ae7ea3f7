"""Names from data become one safe path component, branch and argument: readable ones unchanged,
the rest hashed; stable, and never the same for two different names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bashgym_procs.names import child_path, is_readable, safe_name

HOSTILE = [
    "/tmp/x", "../../outside", "..", ".", "", "-rf", "--upload-pack=touch x", "a/b", "a\\b",
    "ünï/cødé ☃", "line\nbreak", "tab\there", "nul\0byte", "x" * 300, "branch.lock", "end.",
    "a..b", ".hidden", "@{-1}", "HEAD~1", "a b", "ctrl\x1b[31m", "\ud800 lone surrogate",
]  # fmt: skip


@pytest.mark.parametrize("name", ["T-7", "task_12", "abc123def456", "v1.2.3", "0", "A" * 64])
def test_a_readable_name_is_kept(name):
    assert safe_name(name) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_becomes_one_safe_component(tmp_path, name):
    safe = safe_name(name)
    assert safe == safe_name(name)  # stable: a resumed run finds the same folder
    assert "/" not in safe and "\0" not in safe and safe not in (".", "..")
    assert safe[0].isalnum() and len(safe) <= 70 and safe.isascii() and safe.isprintable()
    assert child_path(tmp_path, name).parent == tmp_path
    # a valid branch name that is never read as an option
    ok = subprocess.run(["git", "check-ref-format", "--branch", safe], capture_output=True)
    assert ok.returncode == 0, ok.stderr


def test_two_different_names_never_share_a_component():
    names = [*HOSTILE, "a-b", "a_b", "a b", "a/b", "a\\b", "A/b"]
    assert len({safe_name(n) for n in names}) == len(set(names))
    # a readable name that copies another's hashed form is no collision: `+` is never readable
    forged = safe_name("a/b")
    assert not is_readable(forged) and safe_name(forged) != forged


def test_child_path_keeps_every_name_under_its_root(tmp_path):
    root = tmp_path / "workspaces"
    for name in HOSTILE:
        path = child_path(root, name)
        assert Path(path).resolve().parent == root.resolve()
