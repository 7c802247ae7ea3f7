"""A folder of source files → a code graph: parse each file (in several processes if asked),
then resolve names across the whole repository.

Parsing is per file and independent, so it spreads over processes (the calling one parses
its share too); resolution needs every file's definitions and runs once, in the calling
process. Workers are started with `spawn`: the caller may hold threads (DataDesigner,
litellm), and forking a threaded process can hang.
A file that cannot be read or parsed is recorded in `failed` with its reason; one that is too
large or not UTF-8 text in `skipped`. Neither stops the build.
"""

from __future__ import annotations

import contextlib
import os
import pickle
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


def parse_chunk_to_file(jobs: Sequence[ParseJob], path: str) -> str | list[ParsedFile]:
    """A worker's chunk, pickled to `path` (see `parse_all` for why not through the pipe);
    the chunk itself, through the pipe, when the file cannot be written (a full /dev/shm)."""
    parsed = parse_chunk(jobs)
    try:
        with open(path, "wb") as fh:
            pickle.dump(parsed, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return parsed
    return path


def _load(result: str | list[ParsedFile]) -> list[ParsedFile]:
    """A worker's chunk; its file is removed once read, so few are ever on disk at once."""
    if not isinstance(result, str):
        return result
    with open(result, "rb") as fh:
        parsed = pickle.load(fh)
    os.unlink(result)
    return parsed


def parse_all(jobs: Sequence[ParseJob], workers: int) -> list[ParsedFile]:
    """Every job's ParsedFile, in job order, parsed by `workers` processes in all: this one
    and `workers - 1` spawned ones.

    The jobs are cut into chunks, queued to the spawned workers front first; this process
    parses chunks from the back, each one it can still take out of the queue (a future not yet
    handed to a worker cancels), until it meets one a worker holds. So nobody idles while work
    is left, whoever is slower (a worker still starting, this process loading results), and
    this process's share never crosses between processes.

    A worker pickles its chunk to a file and returns the file's name: results sent back
    through the executor's pipe block the worker until this process's result thread has read
    them, and that thread waits for the GIL this process's parsing holds (on the standard
    library that cost ~1 s of 6). This process loads the files between its own chunks.
    """
    if workers <= 1 or len(jobs) < 4 * workers:
        return parse_chunk(jobs)
    import multiprocessing
    import tempfile
    from concurrent.futures import Future, ProcessPoolExecutor

    size = max(1, len(jobs) // (workers * CHUNKS_PER_PROCESS))
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    done: dict[int, list[ParsedFile]] = {}
    context = multiprocessing.get_context("spawn")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="code-graph-", dir=shm) as folder,
        ProcessPoolExecutor(max_workers=workers - 1, mp_context=context) as pool,
    ):
        futures: list[Future[str | list[ParsedFile]]] = [
            pool.submit(parse_chunk_to_file, chunk, os.path.join(folder, str(i)))
            for i, chunk in enumerate(chunks)
        ]
        front = 0  # the first worker chunk not loaded yet
        for index in range(len(chunks) - 1, -1, -1):
            if not futures[index].cancel():
                break  # a worker has it, and every chunk before it
            done[index] = parse_chunk(chunks[index])
            while front < index and futures[front].done():
                done[front] = _load(futures[front].result())
                front += 1
        for index in range(front, len(chunks)):
            if index not in done:
                done[index] = _load(futures[index].result())
    return [parsed for index in range(len(chunks)) for parsed in done[index]]


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
        parsed = parse_all(jobs, workers)
        result = BuildResult(resolve(repo, parsed), files=len(jobs))
        for item in parsed:
            if item.error is not None:
                bucket = result.skipped if item.error.startswith("skipped") else result.failed
                bucket.append((item.file, item.error))
        # Freed before the collector resumes: its first pass scans every object made while
        # it was paused that is still alive (the references alone: ~0.2 s on the stdlib).
        del parsed
    return result
