"""The `code-repo` source: repositories → graph rows (one per node, edges as id lists).

Each repository is one work item in the run store (namespace `code-repo`): claimed, parsed
into a graph, its rows written to `RUN_DIR/code-graph/<name>.parquet`, then completed with
its statistics. A killed run resumes with the finished repositories read back from those
files, not parsed again; a repository that cannot be read (a bad path, a failed clone) is
failed with its reason and the others go on. Every count — repositories, files parsed,
failed and skipped, nodes, edges by type, names left unresolved — goes into run.json, and
the first failing files of each repository are listed in its notes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, RunContext, Source
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.model import EDGE_TYPES, GRAPH_COLUMNS, graph_rows
from bashgym_pipelines_code_graph.options import CodeRepoOptions
from bashgym_pipelines_code_graph.repos import RepoSpec, checkout, env_ready, fingerprint_files

if TYPE_CHECKING:
    import pandas as pd

NAMESPACE = "code-repo"
NOTED_FAILURES = 5  # failing files listed per repository in run.json's notes


def unique_names(specs: list[RepoSpec]) -> dict[str, str]:
    """Repository key → the name its rows carry (`source_repo`), made unique in input order."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for spec in specs:
        name, n = spec.name, 1
        while name in taken:
            n += 1
            name = f"{spec.name}-{n}"
        taken.add(name)
        names[spec.key] = name
    return names


def read_repo(spec: RepoSpec, name: str, options: CodeRepoOptions, out_dir: Path) -> dict:
    """Parse one repository and write its rows; the store keeps the returned summary."""
    # ~0.5 s (measured): pandas only when rows are made, not whenever the plugins load
    import pandas as pd

    found = checkout(spec, out_dir / "clones")
    built = build_graph(
        name,
        found.root,
        found.files,
        workers=options.workers,
        max_source_chars=options.max_source_chars,
        max_file_bytes=options.max_file_bytes,
    )
    graph = built.graph
    digest = hashlib.sha256(spec.key.encode()).hexdigest()[:8]
    path = out_dir / f"{name}-{digest}.parquet"
    frame = pd.DataFrame(graph_rows(graph), columns=list(GRAPH_COLUMNS))
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)  # a killed run never leaves half a file behind a "done" item
    return {
        "repo": name,
        "path": str(path),
        "commit": found.commit,
        "files": built.files,
        "failed": built.failed[:NOTED_FAILURES],
        "failed_count": len(built.failed),
        "skipped_count": len(built.skipped),
        "nodes": len(graph.nodes),
        "edges": {kind: len(graph.edges[kind]) for kind in EDGE_TYPES},
        "unresolved": dict(built.resolution.unresolved),
        "renamed_modules": built.resolution.renamed_modules,
    }


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
        keys = [s.key for s in specs]
        if len(set(keys)) != len(keys):
            raise InputError("code-repo: a repository is named twice in source.path")
        names = unique_names(specs)
        out_dir = run.run_dir / "code-graph"
        out_dir.mkdir(parents=True, exist_ok=True)
        store = run.store
        store.add(NAMESPACE, [(s.key, {"spec": s.spec, "ref": s.ref}) for s in specs])
        restored = len(store.items(NAMESPACE, "done"))
        while (item := store.claim(NAMESPACE)) is not None:
            spec = RepoSpec(item.payload["spec"], item.payload["ref"])
            try:
                summary = read_repo(spec, names[spec.key], options, out_dir)
            except InputError as exc:
                store.fail(NAMESPACE, item.key, str(exc))
                continue
            store.complete(NAMESPACE, item.key, summary)
        if restored:
            run.count("graph.repos_restored", restored)
        frames, problems = [], []
        for spec in specs:
            item = store.get(NAMESPACE, spec.key)
            if item is None or item.state != "done":
                reason = item.error if item is not None else "not processed"
                problems.append(f"{spec.spec}: {reason}")
                run.count("graph.repos_failed")
                run.note(f"code-repo: {spec.spec} was not read: {reason}")
                continue
            report(run, item.result)
            frames.append(pd.read_parquet(item.result["path"]))
        if not frames:
            raise InputError(f"code-repo: no repository could be read ({'; '.join(problems)})")
        return pd.concat(frames, ignore_index=True)

    def inputs(self, options: CodeRepoOptions) -> list[Path]:
        found: list[Path] = []
        for path in options.paths:
            found += fingerprint_files(RepoSpec(path.strip(), options.ref))
        return found
