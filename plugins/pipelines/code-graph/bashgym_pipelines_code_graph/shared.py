"""A build shared between processes: this one and `workers - 1` spawned ones parse the files,
then each resolves the calls and imports of the files it parsed.

Why the work is split this way (measured on the standard library, two processes):
- Parsing is per file: the files are cut into chunks that the processes claim one at a time,
  the workers from the front, this process from the back, until the two ends meet. Nobody
  idles while work is left, whoever is slower (a worker still starting, this process reading
  what the workers sent).
- A worker sends back only what this process needs to build the graph and the repository's
  index: each file's nodes (as plain tuples: a tuple pickles in C, a Node calls Python),
  `contains` edges, base class references, import bindings and error. Its call references
  (~330k tuples on the standard library) and imports stay where they were parsed.
- Once every file is in, this process sends the workers every node id, the modules and which
  files were renamed (each worker builds its index from them while this process resolves the
  base classes), then the base classes; each worker resolves its own files' calls and imports
  while this process resolves its own, and sends back the edges. The merge in chunk order
  gives exactly the edges, in the order, that one process would.
- A worker writes a parsed chunk to a file (in /dev/shm where there is one) and sends only the
  file's name: a message through the pipe would wait for this process to read it, and this
  process is parsing. If a worker dies, its chunks are parsed here again: the result is the
  same, only later.
Workers are started with `spawn`: the caller may hold threads (DataDesigner, litellm), and
forking a threaded process can hang.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import fields
from itertools import starmap
from multiprocessing import connection
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import Any

from bashgym_pipelines_code_graph.build import ParseJob, parse_chunk
from bashgym_pipelines_code_graph.model import Node
from bashgym_pipelines_code_graph.parsed import ParsedFile, Ref, Target
from bashgym_pipelines_code_graph.resolve import (
    Found,
    Index,
    Resolution,
    Resolver,
    rehome,
    resolve_references,
)

# What a worker sends of one parsed file: (file, language, module id, node field tuples,
# contains edges, inherits references, import bindings, error).
Head = tuple[
    str, str, str, list[tuple], list[tuple[str, str]], list[Ref], dict[str, Target], str | None
]
_node_fields = attrgetter(*(f.name for f in fields(Node)))  # Node's positional order


def head_of(parsed: ParsedFile) -> Head:
    """What this process needs of a file a worker parsed (see the module docstring)."""
    inherits = [ref for ref in parsed.refs if ref[1] == "inherits"]
    rows = list(map(_node_fields, parsed.nodes))
    return (parsed.file, parsed.language, parsed.module_id, rows, parsed.contains, inherits,
            parsed.bindings, parsed.error)  # fmt: skip


def file_of(head: Head) -> ParsedFile:
    """A ParsedFile again from its head: nodes, contains and inherits, no calls or imports."""
    file, language, module_id, rows, contains, inherits, bindings, error = head
    nodes = list(starmap(Node, rows))
    return ParsedFile(file, language, module_id, nodes, contains, inherits, bindings, [], error)


def write_heads(parsed: Sequence[ParsedFile], path: str) -> str | list[Head]:
    """A chunk's heads pickled to `path`, and the path; the heads themselves, to go through
    the pipe, when the file cannot be written (a full /dev/shm)."""
    heads = list(map(head_of, parsed))
    try:
        with open(path, "wb") as fh:
            pickle.dump(heads, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return heads
    return path


def read_heads(sent: str | list[Head]) -> list[ParsedFile]:
    """A chunk a worker sent; its file is removed once read, so few are ever on disk at once."""
    if isinstance(sent, str):
        with open(sent, "rb") as fh:
            heads = pickle.load(fh)
        os.unlink(sent)
    else:
        heads = sent
    return list(map(file_of, heads))


class Claims:
    """The next chunk from the front (workers) and from the back (this process), shared."""

    def __init__(self, context: Any, count: int) -> None:
        self.lock = context.Lock()
        self.ends = context.RawArray("q", [0, count - 1])  # next front, next back

    def take(self, *, front: bool) -> int | None:
        with self.lock:
            first, last = self.ends[0], self.ends[1]
            if first > last:
                return None
            if front:
                self.ends[0] = first + 1
                return first
            self.ends[1] = last - 1
            return last


def work(conn: Connection, claims: Claims, spec: str) -> None:
    """A worker: parse chunks from the front until none is left, keep each one's references,
    then resolve them against the index this process sends. A closed pipe (the caller gave
    up) ends it quietly."""
    gc.disable()  # parsed files hold no cycles, and the kept references only grow
    with open(spec, "rb") as fh:
        chunks, folder = pickle.load(fh)
    try:
        held = parse_claimed(conn, claims, chunks, folder)
        ids, modules, renamed = conn.recv()
        index = Index.of(set(ids.split("\0")), modules)  # while the caller finds the bases
        index.bases = conn.recv()
        conn.send(resolve_held(index, renamed, held))
    except (EOFError, BrokenPipeError):
        return
    conn.close()
    # Everything is sent: skip the interpreter's teardown, which would free every held file
    # one object at a time while the caller waits to join this process.
    os._exit(0)


def parse_claimed(
    conn: Connection, claims: Claims, chunks: Sequence[Sequence[ParseJob]], folder: str
) -> dict[int, list[ParsedFile]]:
    """Parse chunks from the front while any is left, sending each one's heads; returns what
    is kept of them: the references and imports, by chunk."""
    held: dict[int, list[ParsedFile]] = {}
    while (index := claims.take(front=True)) is not None:
        parsed = parse_chunk(chunks[index])
        conn.send((index, write_heads(parsed, os.path.join(folder, str(index)))))
        for item in parsed:  # sent: only the references and imports are needed here now
            item.nodes, item.contains = [], []
        held[index] = parsed
    conn.send(None)  # done parsing
    return held


def resolve_held(
    index: Index, renamed: Sequence[str], held: dict[int, list[ParsedFile]]
) -> dict[int, Found]:
    """Each chunk's Found, its files renamed first where the caller renamed them."""
    moved = set(renamed)
    found = {}
    for key, parsed in held.items():
        files = [f for f in parsed if f.error is None]
        for item in files:
            if item.file in moved:
                rehome(item, item.file)
        found[key] = resolve_references(index, files)
    return found


class Crew:
    """The spawned workers of one build, the pipes to them and the chunks each one sent."""

    def __init__(self, chunks: Sequence[Sequence[ParseJob]], folder: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.claims = Claims(context, len(chunks))
        # The jobs go in a file: a large argument would make `start` wait on the pipe until
        # the new interpreter is up and reading.
        spec = os.path.join(folder, "jobs")
        with open(spec, "wb") as fh:
            pickle.dump((chunks, folder), fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.spec, self.context = spec, context
        self.conns: list[Connection] = []
        self.processes: list[Any] = []
        self.owned: dict[Connection, list[int]] = {}  # chunk indices each worker sent
        self.parsing: set[Connection] = set()
        self.lost: list[int] = []  # chunks sent by workers that died since

    def start(self, count: int) -> None:
        for _ in range(count):
            ours, theirs = self.context.Pipe()
            process = self.context.Process(
                target=work, args=(theirs, self.claims, self.spec), daemon=True
            )
            process.start()
            theirs.close()
            self.conns.append(ours)
            self.processes.append(process)
            self.owned[ours] = []
            self.parsing.add(ours)

    def take(self) -> int | None:
        return self.claims.take(front=False)

    def receive(self, heads: dict[int, list[ParsedFile]], *, wait: bool) -> None:
        """Read what the workers sent into `heads`; with `wait`, until every worker is done
        parsing (or dead: its chunks not sent are missing from `heads`)."""
        while self.parsing:
            ready: list[Any] = connection.wait(list(self.parsing), timeout=None if wait else 0)
            if not ready:
                return
            for conn in ready:
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    self._lost(conn)
                    continue
                if message is None:
                    self.parsing.discard(conn)
                    continue
                index, sent = message
                heads[index] = read_heads(sent)
                self.owned[conn].append(index)

    def send_index(self, resolver: Resolver) -> None:
        """Every node id and module, and the files renamed: a worker builds its index from
        them while this process resolves the base classes. The ids go as one string (NUL
        never occurs in a name or a path): a set of ~75k strings pickles ten times slower."""
        ids = "\0".join(resolver.index.ids)
        self._send((ids, resolver.modules, resolver.result.renamed_modules))

    def send_bases(self, index: Index) -> None:
        self._send(index.bases)

    def _send(self, message: object) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        for conn in list(self.owned):
            try:
                conn.send_bytes(data)
            except OSError:
                self._lost(conn)

    def found(self) -> dict[int, Found]:
        """Each worker's Found by chunk (those of workers that died are in `lost`)."""
        found: dict[int, Found] = {}
        for conn in list(self.owned):
            try:
                found.update(conn.recv())
            except (EOFError, OSError):
                self._lost(conn)
        return found

    def _lost(self, conn: Connection) -> None:
        """A worker is gone: the chunks it sent must be parsed again to be resolved."""
        self.parsing.discard(conn)
        self.lost.extend(self.owned.pop(conn, ()))

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        for process in self.processes:
            process.join(timeout=1)
            if process.is_alive():
                process.terminate()
                process.join()


@contextlib.contextmanager
def crew(chunks: Sequence[Sequence[ParseJob]], count: int) -> Iterator[Crew]:
    """`count` workers over `chunks`, and a folder (in /dev/shm where there is one) for what
    they send; both gone on the way out, whatever happened."""
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="code-graph-", dir=shm) as folder:
        team = Crew(chunks, folder)
        try:
            team.start(count)
            yield team
        finally:
            team.close()


def build_shared(
    repo: str, jobs: Sequence[ParseJob], workers: int, chunks_per_process: int
) -> tuple[Resolution, list[ParsedFile]]:
    """The resolution of `jobs` by `workers` processes in all, and every file in job order
    (the workers' files without their calls and imports)."""
    size = max(1, len(jobs) // (workers * chunks_per_process))
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    heads: dict[int, list[ParsedFile]] = {}
    local: dict[int, list[ParsedFile]] = {}  # parsed here, references and all
    with crew(chunks, workers - 1) as team:
        while (index := team.take()) is not None:
            local[index] = heads[index] = parse_chunk(chunks[index])
            team.receive(heads, wait=False)
        team.receive(heads, wait=True)
        for index in range(len(chunks)):
            if index not in heads:  # claimed by a worker that died
                local[index] = heads[index] = parse_chunk(chunks[index])
        files = [item for index in range(len(chunks)) for item in heads[index]]
        resolver = Resolver(repo, files)
        team.send_index(resolver)
        resolver.structure()
        team.send_bases(resolver.index)
        found = {key: resolve_references(resolver.index, local[key]) for key in local}
        found.update(team.found())
        lost = team.lost
    if lost:  # parsed again here: the same files, renamed as the resolver renamed them
        again = {key: parse_chunk(chunks[key]) for key in lost}
        found.update(resolve_held(resolver.index, resolver.result.renamed_modules, again))
    for index in range(len(chunks)):
        resolver.merge(found[index])
    return resolver.finish(), files
