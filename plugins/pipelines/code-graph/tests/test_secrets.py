"""The code-repo source leaves no secret in the run dir (QA finding F1).

A repository is often parsed because of what its code holds, hard-coded keys included, and a
git URL may carry a token. The dataset was always scrubbed by the engine, but the source's own
files were not: its per-repository graph cache held every file's text as it is, the run store
(`state.db`) held the URL with its token (item key, payload and error), the cache's file name
and `repo` column held a token in a folder name, and a clone (with the token in its
`.git/config`) stayed in the run dir. Each secret here is fresh and random, shaped as the real
thing, so only a real redaction hides it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from bashgym_pipelines_code_graph import source as source_module
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.model import GRAPH_COLUMNS, graph_rows
from bashgym_pipelines_code_graph.options import CodeRepoOptions
from bashgym_pipelines_code_graph.repos import RepoSpec
from bashgym_pipelines_code_graph.source import NAMESPACE, CodeRepoSource, plan
from bashgym_scrubbers_secrets import Redactor, Scrubbing
from bashgym_testing.tokens import github_token
from bashgym_testing.tokens import random_text as fresh

from bashgym.contracts import InputError, RunContext
from bashgym.settings import Settings
from bashgym.store import run_scratch

EDGES = {"contains": 3, "calls": 2}  # what CLIENT below holds


CLIENT = '''"""A client with its keys written into the code."""
import os

AWS_SECRET_ACCESS_KEY = "{aws}"
GITHUB_TOKEN = "{gh}"


def connect(password=os.getenv("DB_PASSWORD", "{pw}")):
    """Open a session."""
    return helper(password)


def helper(x):
    return x


def main():
    return connect()
'''


@pytest.fixture
def leaky(tmp_path: Path, git_cmd) -> dict[str, str]:
    """A committed repository whose folder name holds a token and whose code holds three
    more secrets; the secrets by label, and the repository's path under `root`."""
    found = {
        "folder": github_token(),
        "aws": fresh(40),
        "gh": github_token(),
        "pw": fresh(20),
        "url": github_token(),
    }
    root = tmp_path / "src" / f"app-{found['folder']}"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "client.py").write_text(CLIENT.format(**found))
    git_cmd(root, "init", "-q", "-b", "main")
    git_cmd(root, "add", "-A")
    git_cmd(root, "commit", "-q", "-m", "keys")
    return {**found, "root": str(root)}


def token_url(token: str) -> str:
    """A git URL with a token that fails to clone (nothing listens on port 9)."""
    return f"https://x-access-token:{token}@127.0.0.1:9/org/repo.git"


def leaks(run_dir: Path, values: dict[str, str], *streams: str) -> list[str]:
    """Where any secret shows: a file's name, its bytes, the store as SQL, parquet rows."""
    found = []
    for path in sorted(run_dir.rglob("*")):
        texts = [str(path.relative_to(run_dir))]
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
            if path.name == "state.db":
                with sqlite3.connect(path) as db:
                    texts.append("\n".join(db.iterdump()))
            if path.suffix == ".parquet":
                frame = pd.read_parquet(path)
                texts.append(frame.to_json() + " ".join(map(str, frame.columns)))
        found += [f"{path}: {k}" for k, v in values.items() for t in texts if v in t]
    found += [f"terminal: {k}" for k, v in values.items() for t in streams if v in t]
    return found


def secret_values(leaky: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in leaky.items() if k != "root"}


def scrubbed_context(run_dir: Path) -> RunContext:
    """A hand-built run with the default scrubbing (as a real run has)."""
    scrubbing = Scrubbing(enabled=True, redactors=[Redactor()])
    return RunContext(run_dir=run_dir, settings=Settings(), scrubbing=scrubbing)


@pytest.mark.parametrize("ref", [None, "main"], ids=["on-disk", "cloned-at-ref"])
def test_a_run_writes_no_secret_of_the_repository_or_its_url(bashgym_cli, leaky, tmp_path, ref):
    out = tmp_path / "run"
    paths = [leaky["root"] if ref is None else f"file://{leaky['root']}", token_url(leaky["url"])]
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={json.dumps(paths)}",
        *(["--set", f"source.ref={ref}"] if ref else []),
        "-p", "code-graph-pairs", "--set", "pipeline.qa=false", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert leaks(out, secret_values(leaky), result.stdout, result.stderr) == []

    # the dataset is what it was: one pair per edge, from the repository named as redacted
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    assert counts["graph.repos"] == 1 and counts["graph.repos_failed"] == 1
    assert {k: counts[f"graph.edges.{k}"] for k in EDGES} == EDGES
    frame = pd.read_parquet(out / "data.parquet")
    assert counts["kept"] == len(frame) > 0
    assert {k: int(n) for k, n in frame["pair_type"].value_counts().items() if k in EDGES} == EDGES
    assert set(frame["source_repo"]) == {"app-[REDACTED:github-token]"}
    # the cache holds the code as the dataset does: secrets redacted, the rest kept
    (cache,) = (out / "code-graph").glob("*.parquet")
    assert cache.name.startswith("app-_REDACTED_github-token-")
    rows = pd.read_parquet(cache).set_index("node_id")
    client = rows.loc["pkg.client", "source"]
    assert 'AWS_SECRET_ACCESS_KEY = "[REDACTED:' in client and "def main():" in client
    assert 'GITHUB_TOKEN = "[REDACTED:github-token]"' in client
    # the failed clone is named and explained (git's reason), its token redacted
    (note,) = [n for n in summary["notes"] if "was not read" in n]
    assert "[REDACTED:" in note and "127.0.0.1" in note and "unable to access" in note
    assert not list(out.rglob(".git")) and not (out / "bashgym-scratch").exists()


def test_store_keys_hide_the_secret_and_keep_specs_apart():
    """Two URLs that differ only in their token are two items; the same spec is the same key
    on every attempt (a resume finds it); a spec with nothing to hide is its own key."""
    one, two = token_url(github_token()), token_url(github_token())
    redact = Redactor().text
    specs = [RepoSpec(one), RepoSpec(two), RepoSpec("/plain/tool", "v1")]
    first, again = plan(specs, redact), plan(specs, redact)
    assert [r.key for r in first] == [r.key for r in again]
    assert first[0].key != first[1].key and first[0].label == first[1].label
    assert [r.name for r in first] == ["repo", "repo-2", "tool"]
    assert "ghp_" not in "".join(r.key + r.label + r.name + r.stem for r in first)
    assert first[2].key == "/plain/tool@v1" and first[2].stem == "tool"
    # a token in user info that no scrubber rule knows is masked all the same
    (odd,) = plan([RepoSpec("https://oauth2:plain-words-token@git.example.com/a/b.git")], redact)
    assert "plain-words-token" not in odd.key + odd.label


def test_a_clone_is_removed_and_resume_reads_the_scrubbed_cache(leaky, tmp_path, monkeypatch):
    # a run dir named like a token: the store keeps no path to it (redacted, it would be lost)
    dir_token = github_token()
    run_dir = tmp_path / f"out-{dir_token}"
    values = {**secret_values(leaky), "run_dir": dir_token}
    options = CodeRepoOptions(path=[f"file://{leaky['root']}", token_url(leaky["url"])], ref="main")
    cloned: list[Path] = []
    real_checkout = source_module.checkout

    def seen_checkout(*args, **kwargs):  # the real checkout; remembers where the clone went
        found = real_checkout(*args, **kwargs)
        cloned.append(found.root)
        return found

    monkeypatch.setattr(source_module, "checkout", seen_checkout)
    with run_scratch(run_dir / "bashgym-scratch"):
        run = scrubbed_context(run_dir)
        first = CodeRepoSource().open(options, run)
        (clone,) = cloned  # the URL failed before a clone was made
        assert clone.is_relative_to(run_dir / "bashgym-scratch")
        assert not clone.exists()  # gone once its rows were written, not only at the run's end
    assert run.store.counts(NAMESPACE) == {"done": 1, "failed": 1}
    assert set(first["repo"]) == {"app-[REDACTED:github-token]"} and len(first) == 5
    assert leaks(run_dir, values, *run.notes) == []

    def no_reading(*args, **kwargs):
        raise AssertionError("a finished repository was cloned or parsed again")

    monkeypatch.setattr(source_module, "checkout", no_reading)
    monkeypatch.setattr(source_module, "build_graph", no_reading)
    again = scrubbed_context(run_dir)
    second = CodeRepoSource().open(options, again)
    assert again.counts["graph.repos_restored"] == 1 and again.counts["graph.repos_failed"] == 1
    assert second.equals(first)
    assert leaks(run_dir, values, *again.notes) == []
    # what the restored rows had redacted is counted, as a fresh scrub of them finds it
    fresh_scrub = Redactor()
    raw = build_graph("app-[REDACTED:github-token]", Path(leaky["root"])).graph
    fresh_scrub.frame(pd.DataFrame(graph_rows(raw), columns=list(GRAPH_COLUMNS)))
    prefix = "graph.restored_redactions."
    restored = {k[len(prefix) :]: n for k, n in again.counts.items() if k.startswith(prefix)}
    assert restored == dict(fresh_scrub.counts) and restored["aws-secret-key"] >= 1


def test_an_unreadable_url_fails_the_run_without_its_token(tmp_path):
    token = github_token()
    run = scrubbed_context(tmp_path / "run")
    with pytest.raises(InputError, match="no repository could be read") as raised:
        CodeRepoSource().open(CodeRepoOptions(path=token_url(token)), run)
    assert token not in str(raised.value) and "unable to access" in str(raised.value)
    assert leaks(tmp_path / "run", {"url": token}, *run.notes) == []
