"""A folder of source files → a code graph: parse each file (in several processes if asked),
then resolve names across the whole repository.

Parsing is per file and independent, so it spreads over processes (the calling one parses
its share too); resolution needs every file's definitions, and then each file's calls and
imports are resolved where the file was parsed (`shared.py`).
A file that cannot be read or parsed is recorded in `failed` with its reason; one that is too
large or not UTF-8 text in `skipped`. Neither stops the build.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bashgym_pipelines_code_graph.bulk import gc_paused
from bashgym_pipelines_code_graph.parsed import ParsedFile, failed
from bashgym_pipelines_code_graph.python_ast import parse_python
from bashgym_pipelines_code_graph.resolve import Resolution, resolve
from bashgym_pipelines_code_graph.typescript import EXTENSIONS, parse_typescript

# Folders never worth parsing when a plain folder (not a git checkout) is walked.
SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "site-packages", "venv", "dist", "build", "vendor"}
)
CHUNKS_PER_PROCESS = 64  # small enough that the last chunks finish close together


def language_of(path: str) -> str | None:
    ext = posixpath.splitext(path)[1]
    if ext == ".py":
        return "python"
    if ext in EXTENSIONS and not path.endswith((".d.ts", ".min.js")):
        return "typescript" if EXTENSIONS[ext] in ("typescript", "tsx") else "javascript"
    return None


def walk_sources(root: Path) -> list[str]:
    """Parseable files under `root` (repository-relative, sorted), skipping hidden folders and
    SKIP_DIRS: for folders that are not git checkouts (git lists its own tracked files)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        rel = os.path.relpath(folder, root)
        for name in files:
            path = name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
            if language_of(path) is not None:
                found.append(path)
    return sorted(found)


@dataclass(frozen=True)
class ParseJob:
    root: str
    path: str
    max_source_chars: int
    max_file_bytes: int


def parse_file(job: ParseJob) -> ParsedFile:
    """Read and parse one file; every failure comes back as a value, never an exception."""
    language = language_of(job.path) or "unknown"
    try:
        full = os.path.join(job.root, job.path)
        size = os.path.getsize(full)
        if size > job.max_file_bytes:
            return failed(job.path, language, "", f"skipped: {size} bytes is over the limit")
        with open(full, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return failed(job.path, language, "", f"unreadable: {exc.strerror or exc}")
    if b"\0" in data:
        return failed(job.path, language, "", "skipped: binary content")
    if language == "python":
        return parse_python(job.path, data, job.max_source_chars)
    return parse_typescript(job.path, data, job.max_source_chars)


def parse_chunk(jobs: Sequence[ParseJob]) -> list[ParsedFile]:
    return [parse_file(job) for job in jobs]


@dataclass
class BuildResult:
    """A repository's graph, and every file that did not make it in, with the reason."""

    resolution: Resolution
    files: int
    failed: list[tuple[str, str]] = field(default_factory=list)  # parse errors
    skipped: list[tuple[str, str]] = field(default_factory=list)  # too large, binary

    @property
    def graph(self):
        return self.resolution.graph


def build_graph(
    repo: str,
    root: Path,
    files: Iterable[str] | None = None,
    *,
    workers: int = 1,
    max_source_chars: int = 4000,
    max_file_bytes: int = 1_000_000,
) -> BuildResult:
    """The graph of `files` (repository-relative; default: every parseable file) under `root`."""
    paths = sorted(files) if files is not None else walk_sources(root)
    jobs = [
        ParseJob(str(root), p, max_source_chars, max_file_bytes)
        for p in paths
        if language_of(p) is not None
    ]
    with gc_paused():
        if workers > 1 and len(jobs) >= 4 * workers:
            from bashgym_pipelines_code_graph.shared import build_shared  # circular: it imports us

            resolution, parsed = build_shared(repo, jobs, workers, CHUNKS_PER_PROCESS)
        else:
            parsed = parse_chunk(jobs)
            resolution = resolve(repo, parsed)
        result = BuildResult(resolution, files=len(jobs))
        for item in parsed:
            if item.error is not None:
                bucket = result.skipped if item.error.startswith("skipped") else result.failed
                bucket.append((item.file, item.error))
        # Freed before the collector resumes: its first pass scans every object made while
        # it was paused that is still alive (the references alone: ~0.2 s on the stdlib).
        del parsed
    return result
