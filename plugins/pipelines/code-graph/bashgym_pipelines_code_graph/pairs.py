"""A code graph → structural training triplets (anchor, positive, hard negative, weight).

- One pair per edge: the source node is the anchor, the target the positive, weighted by how
  strongly the edge says "these belong together" (contains 1.0, calls 0.9, inherits 0.9,
  imports 0.8).
- `same_file`: siblings (same parent, next to each other in the file), weight 0.5.
- `docstring`: a node's docstring as the anchor and its code without the docstring as the
  positive (what a natural-language code search must match), weight 1.0.

The negative is a *hard* one: a node from the positive's file (else the anchor's, else the
repo) that is not connected to the anchor by any edge and does not overlap the anchor's or the
positive's lines (a module's text contains its functions': it must never be a negative for
them). A `same_file` pair takes its negative from another file, by definition. Which candidate
is chosen comes from a stable hash of the run seed and the pair, so the same graph and seed
give the same triplets in any process, in any order (Python's own `hash` is salted per
process, so it is not used). A pair for which no candidate exists (a repo of two nodes) is
returned in `unpaired` with the reason, never dropped silently.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from bashgym_pipelines_code_graph.bulk import gc_paused
from bashgym_pipelines_code_graph.model import EDGE_TYPES, Graph, Node

WEIGHTS = {"contains": 1.0, "calls": 0.9, "inherits": 0.9, "imports": 0.8, "same_file": 0.5,
           "docstring": 1.0}  # fmt: skip
STRUCTURAL_TYPES = (*EDGE_TYPES, "same_file", "docstring")
PAIR_COLUMNS = (
    "anchor", "positive", "negative", "pair_type", "weight", "source_repo",
    "anchor_id", "positive_id", "negative_id",
)  # fmt: skip
PROBES = 64  # candidates tried per pool before falling back to the next pool
MIN_DOCSTRING_CHARS = 12


def render(node: Node, max_chars: int, *, with_docstring: bool = True) -> str:
    """A node as training text: its id (names carry meaning), then its source."""
    body = node.source if with_docstring else node.code()
    text = f"{node.node_id}\n{body or node.signature}"
    return text[:max_chars]


def stable_index(seed: int, key: str, size: int) -> int:
    return zlib.crc32(f"{seed}|{key}".encode()) % size


@dataclass
class PairSet:
    """Triplets as rows of PAIR_COLUMNS values (one DataFrame at the end), and the pairs
    that found no negative, by reason."""

    rows: list[tuple] = field(default_factory=list)
    unpaired: dict[str, int] = field(default_factory=dict)  # reason -> count

    def add(self, *values: object) -> None:
        self.rows.append(values)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def columns(self) -> dict[str, list]:
        if not self.rows:
            return {c: [] for c in PAIR_COLUMNS}
        values = zip(*self.rows, strict=True)
        return {c: list(v) for c, v in zip(PAIR_COLUMNS, values, strict=True)}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row[3]] = out.get(row[3], 0) + 1
        return out

    def extend(self, other: PairSet) -> None:
        self.rows.extend(other.rows)
        for reason, n in other.unpaired.items():
            self.unpaired[reason] = self.unpaired.get(reason, 0) + n


class NegativeSampler:
    """Picks hard negatives for one graph (see the module docstring)."""

    def __init__(self, graph: Graph, seed: int) -> None:
        self.graph, self.seed = graph, seed
        self.nodes = graph.nodes
        self.by_file = graph.by_file()
        self.all_ids = list(graph.nodes)
        self.neighbours = graph.neighbours()
        # Per file, the latest first line and the earliest last line of its nodes: a node whose
        # lines reach both overlaps every node of that file (a module does), so no candidate
        # there can be its negative and the file's pool is skipped without probing it.
        self.extent: dict[str, tuple[int, int]] = {}
        for file, ids in self.by_file.items():
            spans = [(self.nodes[i].start_line, self.nodes[i].end_line) for i in ids]
            self.extent[file] = (max(s for s, _ in spans), min(e for _, e in spans))

    def _useful(self, pool_file: str, a: Node, p: Node) -> bool:
        """False when `a` or `p` overlaps every node of `pool_file` (see `extent`)."""
        last_start, first_end = self.extent[pool_file]
        for node in (a, p):
            if node.file == pool_file and last_start <= node.end_line and node.start_line <= first_end:
                return False
        return True

    def pick(
        self,
        anchor: str,
        positive: str,
        key: str,
        pools: Iterable[list[str]],
        accept: Callable[[Node], bool] | None = None,
    ) -> str | None:
        nodes = self.nodes
        a, p = nodes[anchor], nodes[positive]
        # locals, not attribute lookups: this loop runs for every pair (~200k on the stdlib)
        a_file, a_start, a_end = a.file, a.start_line, a.end_line
        p_file, p_start, p_end = p.file, p.start_line, p.end_line
        linked = self.neighbours[anchor]
        index = zlib.crc32(f"{self.seed}|{key}".encode())
        for pool in pools:
            size = len(pool)
            if not size:
                continue
            start = index % size
            for i in range(min(size, PROBES)):
                candidate = pool[(start + i) % size]
                if candidate in (anchor, positive) or candidate in linked:
                    continue
                node = nodes[candidate]
                file = node.file
                if file == a_file and node.start_line <= a_end and a_start <= node.end_line:
                    continue  # overlaps the anchor: it contains it, or is contained
                if file == p_file and node.start_line <= p_end and p_start <= node.end_line:
                    continue
                if accept is not None and not accept(node):
                    continue
                return candidate
        return None

    def near(self, anchor: str, positive: str, key: str) -> str | None:
        """From the positive's file, else the anchor's, else anywhere in the repo."""
        a, p = self.nodes[anchor], self.nodes[positive]
        files = (p.file,) if p.file == a.file else (p.file, a.file)
        pools = [self.by_file[f] for f in files if self._useful(f, a, p)]
        pools.append(self.all_ids)
        return self.pick(anchor, positive, key, pools)

    def elsewhere(self, anchor: str, positive: str, key: str) -> str | None:
        """From any file but the anchor's."""
        home = self.nodes[anchor].file
        return self.pick(anchor, positive, key, [self.all_ids], accept=lambda n: n.file != home)


def siblings(graph: Graph) -> list[tuple[str, str]]:
    """Consecutive children of one parent, in file order (the `same_file` pairs)."""
    children: dict[str, list[str]] = {}
    for parent, child in graph.edges["contains"]:
        children.setdefault(parent, []).append(child)
    out = []
    for kids in children.values():
        kids.sort(key=lambda n: graph.nodes[n].start_line)
        out.extend(pairwise(kids))
    return out


def structural_pairs(
    graph: Graph,
    *,
    seed: int = 0,
    types: Iterable[str] = STRUCTURAL_TYPES,
    max_chars: int = 2000,
) -> PairSet:
    """Every structural triplet of `graph` for the pair `types` asked for."""
    with gc_paused():
        return _structural_pairs(graph, seed, set(types), max_chars)


def _structural_pairs(graph: Graph, seed: int, wanted: set[str], max_chars: int) -> PairSet:
    out = PairSet()
    sampler = NegativeSampler(graph, seed)
    nodes, repo = graph.nodes, graph.repo
    texts: dict[str, str] = {}

    def text(ident: str) -> str:
        found = texts.get(ident)
        if found is None:
            found = texts[ident] = render(nodes[ident], max_chars)
        return found

    def emit(kind: str, anchor_text: str, anchor: str, positive: str, pos_text: str,
             negative: str | None, neg_text: str | None = None) -> None:  # fmt: skip
        if negative is None:
            reason = f"{kind}: no unconnected node for a hard negative"
            out.unpaired[reason] = out.unpaired.get(reason, 0) + 1
            return
        out.add(anchor_text, pos_text, neg_text or text(negative), kind, WEIGHTS[kind], repo,
                anchor, positive, negative)  # fmt: skip

    for src, dst, kind in graph.iter_edges():
        if kind in wanted:
            key = f"{kind}|{src}|{dst}"
            emit(kind, text(src), src, dst, text(dst), sampler.near(src, dst, key))
    if "same_file" in wanted:
        for a, b in siblings(graph):
            emit("same_file", text(a), a, b, text(b), sampler.elsewhere(a, b, f"same|{a}|{b}"))
    if "docstring" in wanted:
        for ident, node in nodes.items():
            if node.kind == "module" or len(node.docstring) < MIN_DOCSTRING_CHARS:
                continue
            negative = sampler.near(ident, ident, f"doc|{ident}")
            code = render(node, max_chars, with_docstring=False)
            neg = (
                render(nodes[negative], max_chars, with_docstring=False)
                if negative is not None
                else None
            )
            emit("docstring", node.docstring[:max_chars], ident, ident, code, negative, neg)
    return out
