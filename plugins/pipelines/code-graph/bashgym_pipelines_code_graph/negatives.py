"""Hard negatives for many pairs at once: `NegativeSampler.near` / `.elsewhere`, vectorized.

Why: the structural pairs of a large repository are ~200k picks (the standard library: 208k),
and probing candidates one Python call at a time was most of the pairs' cost, all of it in
the calling process after the parse. Here the same probes run as numpy array steps over every
pair still looking: probe `i` of all pairs at once, then the next probe for those that found
nothing. The rule and the probe order are exactly `NegativeSampler`'s (pools in the same order,
the start each pair's hash gives, at most PROBES candidates per pool), so both give the same
picks; a test holds them together. One saving is this file's own: a file's pool is skipped
when the anchor or positive overlaps all of it (a module does), as no candidate there could
be a negative — the test shows the picks stay the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import attrgetter

import numpy as np

from bashgym_pipelines_code_graph.model import Graph
from bashgym_pipelines_code_graph.pairs import PROBES

NONE = -1  # no candidate in any pool


class ArraySampler:
    """One graph's nodes as arrays: ids by index, each node's file, first and last line."""

    def __init__(self, graph: Graph) -> None:
        # map() over C-level getters, not generator expressions: one Python frame less per
        # node and per edge end (~75k and ~285k on the standard library)
        self.ids = list(graph.nodes)
        self.index = dict(zip(self.ids, range(len(self.ids)), strict=True))
        n = len(self.ids)
        nodes = list(graph.nodes.values())
        node_files = list(map(attrgetter("file"), nodes))
        files: dict[str, int] = {}
        members: list[int] = []
        offsets: list[int] = []
        by_file: dict[str, list[int]] = {}
        for i, file in enumerate(node_files):
            by_file.setdefault(file, []).append(i)
        for file, idx in by_file.items():
            files[file] = len(offsets)
            offsets.append(len(members))
            members.extend(idx)
        self.file = np.fromiter(map(files.__getitem__, node_files), np.int64, n)
        self.start = np.fromiter(map(attrgetter("start_line"), nodes), np.int64, n)
        self.end = np.fromiter(map(attrgetter("end_line"), nodes), np.int64, n)
        self.members = np.array(members, dtype=np.int64)
        self.offset = np.array(offsets, dtype=np.int64)
        self.size = np.diff(np.append(self.offset, len(members)))
        # per file: the latest first line and the earliest last line of its nodes
        if n:
            self.last_start = np.maximum.reduceat(self.start[self.members], self.offset)
            self.first_end = np.minimum.reduceat(self.end[self.members], self.offset)
        else:
            self.last_start = self.first_end = np.zeros(0, dtype=np.int64)
        self.all = np.arange(n, dtype=np.int64)
        # every edge as (source index, target index), by type
        self.edges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for kind, edges in graph.edges.items():
            flat = np.fromiter(map(self.index.__getitem__, chain.from_iterable(edges)), np.int64)
            self.edges[kind] = (flat[0::2], flat[1::2])
        src = np.concatenate([s for s, _ in self.edges.values()])
        dst = np.concatenate([d for _, d in self.edges.values()])
        self.n = n
        # both directions of every edge as one sorted key each, `a * n + b` (repeats are fine)
        linked = np.sort(np.concatenate([src * n + dst, dst * n + src]))
        self.linked = linked if len(linked) else np.array([NONE], dtype=np.int64)

    def siblings(self) -> tuple[np.ndarray, np.ndarray]:
        """`pairs.siblings` as index arrays, in the same order: parents in the order their first
        `contains` edge comes, each one's children by first line (a stable sort: ties keep
        their edge order), then every two neighbours. One sort of all edges instead of a
        Python key call per child (~72k on the standard library)."""
        parent, child = self.edges["contains"]
        if not len(parent):
            return parent, child
        seen, first = np.unique(parent, return_index=True)
        rank = np.zeros(self.n, dtype=np.int64)
        rank[seen] = first  # a parent's place: where its first edge is
        order = np.lexsort((self.start[child], rank[parent]))
        parent, child = parent[order], child[order]
        same = parent[1:] == parent[:-1]
        return child[:-1][same], child[1:][same]

    def indices(self, idents: Sequence[str]) -> np.ndarray:
        return np.fromiter(map(self.index.__getitem__, idents), np.int64, len(idents))

    def _covers(self, node: np.ndarray, file: np.ndarray) -> np.ndarray:
        """Whether `node` lies in `file` and overlaps every node there."""
        return (
            (self.file[node] == file)
            & (self.last_start[file] <= self.end[node])
            & (self.start[node] <= self.first_end[file])
        )

    def near(self, anchors: np.ndarray, positives: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """Per pair: from the positive's file, else the anchor's, else anywhere (NONE: none)."""
        out = np.full(len(anchors), NONE, dtype=np.int64)
        p_file, a_file = self.file[positives], self.file[anchors]
        for file, wanted in ((p_file, None), (a_file, a_file != p_file)):
            useful = ~(self._covers(anchors, file) | self._covers(positives, file))
            if wanted is not None:
                useful &= wanted
            todo = np.flatnonzero(useful)
            self._probe(out, todo, self.members, self.offset[file], self.size[file],
                        anchors, positives, hashes)  # fmt: skip
        todo = np.flatnonzero(out == NONE)
        zeros = np.zeros(len(anchors), dtype=np.int64)
        sizes = np.full(len(anchors), self.n, dtype=np.int64)
        self._probe(out, todo, self.all, zeros, sizes, anchors, positives, hashes)
        return out

    def elsewhere(
        self, anchors: np.ndarray, positives: np.ndarray, hashes: np.ndarray
    ) -> np.ndarray:
        """Per pair: from any file but the anchor's (NONE: none)."""
        out = np.full(len(anchors), NONE, dtype=np.int64)
        zeros = np.zeros(len(anchors), dtype=np.int64)
        sizes = np.full(len(anchors), self.n, dtype=np.int64)
        todo = np.arange(len(anchors))
        self._probe(out, todo, self.all, zeros, sizes, anchors, positives, hashes, other_file=True)
        return out

    def _probe(
        self,
        out: np.ndarray,
        todo: np.ndarray,
        pool: np.ndarray,
        offset: np.ndarray,
        size: np.ndarray,
        anchors: np.ndarray,
        positives: np.ndarray,
        hashes: np.ndarray,
        *,
        other_file: bool = False,
    ) -> None:
        """Fill `out[todo]` from each pair's pool `pool[offset : offset + size]`, probing from
        `hash % size` on, at most PROBES candidates (pairs with an empty pool are left)."""
        active = todo[(out[todo] == NONE) & (size[todo] > 0)]
        if not len(active):
            return
        first = hashes[active] % size[active]
        limit = np.minimum(size[active], PROBES)
        file, start, end, linked, n = self.file, self.start, self.end, self.linked, self.n
        for i in range(PROBES):
            keep = limit > i
            active, first, limit = active[keep], first[keep], limit[keep]
            if not len(active):
                return
            sz = size[active]
            candidate = pool[offset[active] + (first + i) % sz]
            a, p = anchors[active], positives[active]
            keys = a * n + candidate
            at = np.minimum(np.searchsorted(linked, keys), len(linked) - 1)
            ok = (candidate != a) & (candidate != p) & (linked[at] != keys)
            c_file, c_start, c_end = file[candidate], start[candidate], end[candidate]
            ok &= ~((c_file == file[a]) & (c_start <= end[a]) & (start[a] <= c_end))
            ok &= ~((c_file == file[p]) & (c_start <= end[p]) & (start[p] <= c_end))
            if other_file:
                ok &= c_file != file[a]
            out[active[ok]] = candidate[ok]
            miss = ~ok
            active, first, limit = active[miss], first[miss], limit[miss]
