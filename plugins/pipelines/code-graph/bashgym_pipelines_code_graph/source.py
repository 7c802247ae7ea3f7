"""The `code-repo` source: repositories → graph rows (one per node, edges as id lists).

Each repository is one work item in the run store (namespace `code-repo`): claimed, parsed
into a graph, its rows written to `RUN_DIR/code-graph/<name>-<digest>.parquet`, then completed
with its statistics. A killed run resumes with the finished repositories read back from those
files, not parsed again; a repository that cannot be read (a bad path, a failed clone) is
failed with its reason and the others go on. Every count — repositories, files parsed,
failed and skipped, nodes, edges by type, names left unresolved — goes into run.json, and
the first failing files of each repository are listed in its notes.

Nothing this source keeps in the run dir holds a secret that the dataset would not: a
repository is often parsed *because* of what its code holds, and a URL may carry a token.
So the cached rows are scrubbed as the dataset is; the store keys, payloads, results and errors
name a repository by its redacted spec (a digest of the real one keeps specs that differ only
in a secret apart), with the real spec kept in memory; file names come from redacted names;
and a clone lives in a scratch folder that is removed as soon as its rows are written.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, RunContext, Source
from bashgym.store import scratch_dir
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.model import EDGE_TYPES, GRAPH_COLUMNS, graph_rows
from bashgym_pipelines_code_graph.options import CodeRepoOptions
from bashgym_pipelines_code_graph.repos import (
    RepoSpec,
    checkout,
    env_ready,
    fingerprint_files,
    without_credentials,
)

if TYPE_CHECKING:
    import pandas as pd

NAMESPACE = "code-repo"
NOTED_FAILURES = 5  # failing files listed per repository in run.json's notes
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")  # what never goes into a file name


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


@dataclass(frozen=True)
class Repo:
    """One repository of the run: the real spec (in memory only) and how the run writes it
    down. `key`: its run-store key; `label`: how notes and errors name it; `name`: its rows'
    `repo` (unique in the run); `stem`: its cache file's name. None of the four holds a secret
    the scrubber finds, nor a URL's user info."""

    spec: RepoSpec
    key: str
    label: str
    name: str
    stem: str


def item_key(spec: RepoSpec, label: str, redact: Callable[[str], str]) -> str:
    """`spec`'s run-store key: the redacted spec (and ref), plus a digest of the real key when
    redaction changed it, so two URLs that differ only in their token stay two items and a
    resumed run finds the same key again. A spec with nothing to hide is its own key (as
    before: a run dir written by an older version resumes)."""
    shown = f"{label}@{redact(spec.ref)}" if spec.ref else label
    return spec.key if shown == spec.key else f"{shown}#{_digest(spec.key, 12)}"


def plan(specs: list[RepoSpec], redact: Callable[[str], str]) -> list[Repo]:
    """Each spec as the run writes it down, names made unique in input order."""
    repos: list[Repo] = []
    taken: set[str] = set()
    for spec in specs:
        label = redact(without_credentials(spec.spec))
        base = redact(spec.name)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        stem = _UNSAFE.sub("_", name).strip("._") or "repo"
        repos.append(Repo(spec, item_key(spec, label, redact), label, name, stem))
    return repos


def redactions(run: RunContext) -> Counter[str]:
    """What the run's scrubbing has redacted so far, by type (nothing without scrubbing)."""
    return Counter(run.scrubbing.report().get("redacted", {})) if run.scrubbing else Counter()


def read_repo(repo: Repo, options: CodeRepoOptions, run: RunContext, out_dir: Path) -> dict:
    """Parse one repository and write its rows, scrubbed; the store keeps the returned summary.
    A clone goes to a scratch folder, removed here whatever happens: it holds the repository
    unscrubbed (and a URL's token in `.git/config`), and a resume reads the rows, not it."""
    scratch = scratch_dir("code-repo-")
    try:
        return _read(repo, options, run, out_dir, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(
    repo: Repo, options: CodeRepoOptions, run: RunContext, out_dir: Path, scratch: Path
) -> dict:
    # ~0.5 s (measured): pandas only when rows are made, not whenever the plugins load
    import pandas as pd

    found = checkout(repo.spec, scratch, repo.label)
    built = build_graph(
        repo.name,
        found.root,
        found.files,
        workers=options.workers,
        max_source_chars=options.max_source_chars,
        max_file_bytes=options.max_file_bytes,
    )
    graph = built.graph
    path = out_dir / f"{repo.stem}-{_digest(repo.spec.key, 8)}.parquet"
    before = redactions(run)
    frame = run.scrub_frame(pd.DataFrame(graph_rows(graph), columns=list(GRAPH_COLUMNS)))
    made = redactions(run) - before  # kept: a resume reads these rows already scrubbed
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)  # a killed run never leaves half a file behind a "done" item
    summary = {
        "repo": repo.name,
        "commit": found.commit,
        "files": built.files,
        "failed": built.failed[:NOTED_FAILURES],
        "failed_count": len(built.failed),
        "skipped_count": len(built.skipped),
        "nodes": len(graph.nodes),
        "edges": {kind: len(graph.edges[kind]) for kind in EDGE_TYPES},
        "unresolved": dict(built.resolution.unresolved),
        "renamed_modules": built.resolution.renamed_modules,
        "redacted": dict(made),
    }
    # the file by name, in out_dir: redacting a path (a run dir named like a token) must not
    # lose the rows, and the name is made of safe, redacted text already
    # (redacted as its JSON text, which the scrubber keeps JSON: the store holds it as JSON)
    return {**json.loads(run.redact(json.dumps(summary))), "file": path.name}


def cached(summary: dict[str, Any], out_dir: Path) -> Path:
    """A finished repository's rows (`path`: as a run dir written before names its file)."""
    return out_dir / summary["file"] if "file" in summary else Path(summary["path"])


def report(run: RunContext, summary: dict[str, Any]) -> None:
    """One repository's counts into run.json (counts add up over repositories)."""
    run.count("graph.repos")
    run.count("graph.files", summary["files"])
    run.count("graph.files_failed", summary["failed_count"])
    run.count("graph.files_skipped", summary["skipped_count"])
    run.count("graph.nodes", summary["nodes"])
    for kind, n in summary["edges"].items():
        run.count(f"graph.edges.{kind}", n)
    for kind, n in summary["unresolved"].items():
        run.count(f"graph.unresolved.{kind}", n)
    for file, error in summary["failed"]:
        run.note(f"code-repo {summary['repo']}: {file} did not parse: {error}")
    more = summary["failed_count"] - len(summary["failed"])
    if more > 0:
        run.note(f"code-repo {summary['repo']}: {more} more files did not parse")
    for file in summary["renamed_modules"]:
        run.note(f"code-repo {summary['repo']}: {file} shares its module name; ids use its path")


class CodeRepoSource(Source[CodeRepoOptions]):
    """Code repositories → graph rows: modules, classes, functions, methods and their edges."""

    def open(self, options: CodeRepoOptions, run: RunContext) -> pd.DataFrame:
        import pandas as pd  # (see read_repo)

        env_ready()
        specs = [RepoSpec(p.strip(), options.ref) for p in options.paths]
        if len({s.key for s in specs}) != len(specs):
            raise InputError("code-repo: a repository is named twice in source.path")
        repos = plan(specs, run.redact)
        out_dir = run.run_dir / "code-graph"
        out_dir.mkdir(parents=True, exist_ok=True)
        store = run.store
        shown = [
            (r.key, {"spec": r.label, "ref": r.spec.ref and run.redact(r.spec.ref)}) for r in repos
        ]
        store.add(NAMESPACE, shown)  # what the store may hold; the real spec stays in `repos`
        done = {item.key: item for item in store.items(NAMESPACE, "done")}
        restored = [done[r.key] for r in repos if r.key in done]
        for repo in repos:  # claimed by key: the real spec is only in memory, never read back
            if store.claim(NAMESPACE, repo.key) is None:
                continue  # done (or failed) in an earlier attempt
            try:
                summary = read_repo(repo, options, run, out_dir)
            except InputError as exc:
                store.fail(NAMESPACE, repo.key, run.redact(str(exc)))
                continue
            store.complete(NAMESPACE, repo.key, summary)
        if restored:
            run.count("graph.repos_restored", len(restored))
        for item in restored:  # this attempt's scrub report cannot count what it read redacted
            for kind, n in item.result.get("redacted", {}).items():
                run.count(f"graph.restored_redactions.{kind}", n)
        frames, problems = [], []
        for repo in repos:
            item = store.get(NAMESPACE, repo.key)
            if item is None or item.state != "done":
                reason = item.error if item is not None else "not processed"
                problems.append(f"{repo.label}: {reason}")
                run.count("graph.repos_failed")
                run.note(f"code-repo: {repo.label} was not read: {reason}")
                continue
            report(run, item.result)
            frames.append(pd.read_parquet(cached(item.result, out_dir)))
        if not frames:
            raise InputError(f"code-repo: no repository could be read ({'; '.join(problems)})")
        return pd.concat(frames, ignore_index=True)

    def inputs(self, options: CodeRepoOptions) -> list[Path]:
        found: list[Path] = []
        for path in options.paths:
            found += fingerprint_files(RepoSpec(path.strip(), options.ref))
        return found
