"""Fixtures for the code-graph tests: the shipped sample repository as a real git repository."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from bashgym_testing.server import Reply

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


# The Q&A stage's scripted model (test_qa, test_num_records): one script, shared as a fixture
# (tests are imported by path, not as a package, so they cannot import each other).
FOCUS = re.compile(r"Focus node: (\S+)")
BOGUS = "shop.cart.Cart.nonexistent"


def focus(request) -> str:
    return FOCUS.search(request.last_user_text).group(1)


def is_question(request) -> bool:
    return request.last_user_text.startswith("You write questions")


def is_answer(request) -> bool:
    return request.last_user_text.startswith("Answer the question about this code")


def is_judge(request) -> bool:
    return request.last_user_text.startswith("You review question/answer pairs")


def script(server, *, bad=(), low=(), four=(), pairs=None) -> None:
    """Questions name their focus node; answers cite it (plus `pairs[focus]` when given, plus
    a node that does not exist for `bad` foci); the judge scores `low` foci 2, `four` foci 4
    and the others 5."""
    pairs = pairs or {}

    def ask(request) -> Reply:
        node = focus(request)
        return Reply(json.dumps({"question": f"What does {node} do?", "nodes": [node]}))

    def answer(request) -> Reply:
        node = focus(request)
        cited = [node, *pairs.get(node, []), *([BOGUS] if node in bad else [])]
        return Reply(json.dumps({"answer": f"{node} does its job.", "cited_nodes": cited}))

    def judge(request) -> Reply:
        node = re.search(r"What does (\S+) do\?", request.last_user_text).group(1)
        score = 2 if node in low else 4 if node in four else 5
        return Reply(json.dumps({"relevance": {"reasoning": "scripted", "score": score}}))

    server.add_rule(is_question, ask)
    server.add_rule(is_answer, answer)
    server.add_rule(is_judge, judge)


@pytest.fixture
def qa_model() -> SimpleNamespace:
    """The scripted Q&A model: `script(server, ...)`, `focus(request)`, which requests are
    questions and judgements, and the cited node that does not exist, `BOGUS`."""
    return SimpleNamespace(
        script=script, focus=focus, is_question=is_question, is_judge=is_judge, BOGUS=BOGUS
    )
