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
MIN_DOCSTRING_CHARS = 12
PROBES = 64  # candidates tried per pool before falling back to the next pool


def render(node: Node, max_chars: int, *, with_docstring: bool = True) -> str:
    """A node as training text: its id (names carry meaning), then its source."""
    body = node.source if with_docstring else node.code()
    text = f"{node.node_id}\n{body or node.signature}"
    return text[:max_chars]


def stable_index(seed: int, key: str, size: int) -> int:
    return zlib.crc32(f"{seed}|{key}".encode()) % size


@dataclass
class PairSet:
    """Triplets as one list per PAIR_COLUMNS column (the DataFrame's own layout), and the
    pairs that found no negative, by reason.

    Columns, not a tuple per row: a run makes ~200k rows per large repository, and each tuple
    is an object the cyclic collector walks on its first pass after the build (~0.1 s on the
    standard library's pairs); nine lists are nine objects."""

    columns: dict[str, list] = field(default_factory=lambda: {c: [] for c in PAIR_COLUMNS})
    unpaired: dict[str, int] = field(default_factory=dict)  # reason -> count

    def add(self, *values: object) -> None:
        for column, value in zip(self.columns.values(), values, strict=True):
            column.append(value)

    def add_many(self, **columns: list) -> None:
        """Rows given column by column (every PAIR_COLUMNS name, lists of one length)."""
        for name, column in self.columns.items():
            column.extend(columns[name])

    def __len__(self) -> int:
        return len(self.columns["anchor"])

    @property
    def rows(self) -> list[tuple]:
        """One tuple of PAIR_COLUMNS values per triplet."""
        return list(zip(*self.columns.values(), strict=True))

    def extend(self, other: PairSet) -> None:
        self.add_many(**other.columns)
        for reason, n in other.unpaired.items():
            self.unpaired[reason] = self.unpaired.get(reason, 0) + n


class NegativeSampler:
    """Picks hard negatives for one graph (see the module docstring), one pair per call: for
    the Q&A triplets. `structural_pairs` picks all of its pairs at once with the vectorized
    twin, `negatives.ArraySampler`, which follows the same rule (a test holds them together)."""

    def __init__(self, graph: Graph, seed: int) -> None:
        self.graph, self.seed = graph, seed
        self.nodes = graph.nodes
        self.by_file = graph.by_file()
        self.all_ids = list(graph.nodes)
        self.neighbours = graph.neighbours()

    def pick(
        self,
        anchor: str,
        positive: str,
        key: str,
        pools: Iterable[list[str]],
        accept: Callable[[Node], bool] | None = None,
    ) -> str | None:
        """The first acceptable candidate, probing each pool from a place `key` hashes to."""
        index = zlib.crc32(f"{self.seed}|{key}".encode())
        nodes = self.nodes
        a, p = nodes[anchor], nodes[positive]
        # locals, not attribute lookups: this loop runs for every pair (~200k on the stdlib)
        a_file, a_start, a_end = a.file, a.start_line, a.end_line
        p_file, p_start, p_end = p.file, p.start_line, p.end_line
        linked = self.neighbours[anchor]
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
        p_file, a_file = self.nodes[positive].file, self.nodes[anchor].file
        files = (p_file,) if p_file == a_file else (p_file, a_file)
        pools = [self.by_file[file] for file in files] + [self.all_ids]
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
    # numpy on first use (~0.12 s, measured): parse workers import this package and need none
    # of it; `negatives` imports numpy, and imports this module (circular)
    import numpy as np

    from bashgym_pipelines_code_graph.negatives import NONE, ArraySampler

    out = PairSet()
    if not graph.nodes:
        return out
    sampler = ArraySampler(graph)
    nodes, repo, ids = graph.nodes, graph.repo, sampler.ids
    crc32 = zlib.crc32
    # Every pair first (anchor and positive as node indices, the hash of its key), the
    # negatives for all of them at once, then the rows in order: edges by type, siblings,
    # docstrings. Nearly every node is in some row: all texts are rendered once, up front.
    groups: list[tuple[str, np.ndarray, np.ndarray]] = []
    hashes: list[int] = []
    for kind in EDGE_TYPES:
        if kind in wanted:
            groups.append((kind, *sampler.edges[kind]))
            prefix = f"{seed}|{kind}|"
            hashes += [crc32(f"{prefix}{s}|{d}".encode()) for s, d in graph.edges[kind]]
    documented: list[str] = []
    if "docstring" in wanted:
        documented = [
            ident
            for ident, node in nodes.items()
            if node.kind != "module" and len(node.docstring) >= MIN_DOCSTRING_CHARS
        ]
        hashes += [crc32(f"{seed}|doc|{ident}".encode()) for ident in documented]
        doc_index = sampler.indices(documented)
        groups.append(("docstring", doc_index, doc_index))
    if not groups:
        picks = np.zeros(0, dtype=np.int64)
    else:
        anchors = np.concatenate([a for _, a, _ in groups])
        positives = np.concatenate([p for _, _, p in groups])
        picks = sampler.near(anchors, positives, np.array(hashes, dtype=np.int64))
    # Texts and ids by node index, as object arrays: a column is then one take of the pairs'
    # indices (~3x faster than a list comprehension per column, nine columns per pair type).
    # `render` inline: one call less per node (~75k on the standard library).
    texts = np.array(
        [f"{n.node_id}\n{n.source or n.signature}"[:max_chars] for n in nodes.values()],
        dtype=object,
    )
    names = np.array(ids, dtype=object)

    def emit(kind: str, anchor: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> None:
        kept = negative != NONE
        if not kept.all():
            reason = f"{kind}: no unconnected node for a hard negative"
            out.unpaired[reason] = out.unpaired.get(reason, 0) + len(kept) - int(kept.sum())
            anchor, positive, negative = anchor[kept], positive[kept], negative[kept]
        n = len(anchor)
        out.add_many(
            anchor=texts[anchor].tolist(), positive=texts[positive].tolist(),
            negative=texts[negative].tolist(), pair_type=[kind] * n,
            weight=[WEIGHTS[kind]] * n, source_repo=[repo] * n,
            anchor_id=names[anchor].tolist(), positive_id=names[positive].tolist(),
            negative_id=names[negative].tolist(),
        )  # fmt: skip

    at = 0
    for kind, group_a, group_p in groups:
        picked, at = picks[at : at + len(group_a)], at + len(group_a)
        if kind != "docstring":  # those come after the siblings
            emit(kind, group_a, group_p, picked)
    if "same_file" in wanted:
        a_index, p_index = sampler.siblings()
        keys = [
            crc32(f"{seed}|same|{a}|{b}".encode())
            for a, b in zip(names[a_index].tolist(), names[p_index].tolist(), strict=True)
        ]
        emit("same_file", a_index, p_index,
             sampler.elsewhere(a_index, p_index, np.array(keys, dtype=np.int64)))  # fmt: skip
    if documented:
        picked = picks[len(picks) - len(documented) :].tolist()
        negatives = [NONE if i == NONE else ids[i] for i in picked]
        _docstring_rows(out, graph, documented, negatives, max_chars)
    return out


def _docstring_rows(
    out: PairSet, graph: Graph, documented: list[str], picked: list, max_chars: int
) -> None:
    """(docstring, its code, another node's code) for each documented node, column by column;
    `picked`: each one's negative id, or NONE."""
    from bashgym_pipelines_code_graph.negatives import NONE  # (see _structural_pairs)

    nodes = graph.nodes
    kept = [(a, n) for a, n in zip(documented, picked, strict=True) if n != NONE]
    if len(kept) < len(documented):
        reason = "docstring: no unconnected node for a hard negative"
        out.unpaired[reason] = out.unpaired.get(reason, 0) + len(documented) - len(kept)
    anchors = [ident for ident, _ in kept]
    negatives = [negative for _, negative in kept]
    out.add_many(
        anchor=[nodes[i].docstring[:max_chars] for i in anchors],
        positive=[render(nodes[i], max_chars, with_docstring=False) for i in anchors],
        negative=[render(nodes[i], max_chars, with_docstring=False) for i in negatives],
        pair_type=["docstring"] * len(kept), weight=[WEIGHTS["docstring"]] * len(kept),
        source_repo=[graph.repo] * len(kept), anchor_id=anchors, positive_id=anchors,
        negative_id=negatives,
    )  # fmt: skip
