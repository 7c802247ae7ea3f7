"""Fixtures for the code-graph tests: the shipped sample repository as a real git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent / "fixtures" / "sample_repo"
# Files that must fail to parse; written by the fixture so that no linter trips on them.
BROKEN = {
    "shop/broken.py": '"""Does not parse."""\n\n\ndef oops(:\n    pass\n',
    "web/src/bad.ts": "// Does not parse either.\nexport function (x: number {\n",
}


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "HOME": str(cwd), "PATH": "/usr/bin:/bin:/usr/local/bin"}  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def make_repo(target: Path, *, broken: bool = True) -> Path:
    """The sample repository, committed, under `target` (broken files included by default)."""
    shutil.copytree(SAMPLE, target)
    if broken:
        for rel, text in BROKEN.items():
            (target / rel).write_text(text)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "sample")
    return target


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "sample")


@pytest.fixture
def git_cmd():
    """`git_cmd(repo, *args)`: run git in `repo` with a fixed identity; returns stdout."""
    return git


@pytest.fixture
def repo_factory():
    """`repo_factory(target, broken=True)`: the sample repository, committed, at `target`."""
    return make_repo
