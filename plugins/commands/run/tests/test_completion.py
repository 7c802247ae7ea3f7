"""Shell completion of plugin names on the run's role flags, through the real `bashgym`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASHGYM = Path(sys.executable).parent / "bashgym"


def complete(words: str, tmp_path: Path) -> list[str]:
    env = {
        **os.environ,
        "_BASHGYM_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [str(BASHGYM)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not BASHGYM.exists(), reason="the bashgym script is not installed here")
def test_role_flags_complete_the_installed_plugin_names(tmp_path):
    sinks = complete("bashgym run -k ", tmp_path)
    assert {"nemo-jsonl", "parquet", "atif"} <= set(sinks)
    assert complete("bashgym run --executor stu", tmp_path) == ["student"]
    assert complete("bashgym run -e bub", tmp_path) == ["bubblewrap"]
    assert complete("bashgym run -p nothing-like-this", tmp_path) == []
