"""Structural pairs: one per edge (and sibling, and docstring), hard negatives, deterministic."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.pairs import WEIGHTS, siblings, structural_pairs


@pytest.fixture
def graph(sample_repo):
    return build_graph("sample", sample_repo).graph


def rows(pairs):
    cols = pairs.columns
    return [dict(zip(cols, values, strict=True)) for values in zip(*cols.values(), strict=True)]


def test_counts_per_type_match_the_graph(graph):
    pairs = structural_pairs(graph, seed=7)
    counts = Counter(pairs.columns["pair_type"])
    for kind in ("contains", "calls", "imports", "inherits"):
        assert counts[kind] == len(graph.edges[kind]), kind
    assert counts["same_file"] == len(siblings(graph))
    documented = [n for n in graph.nodes.values() if n.kind != "module" and len(n.docstring) >= 12]
    assert counts["docstring"] == len(documented)
    assert not pairs.unpaired
    for row in rows(pairs):
        assert row["weight"] == WEIGHTS[row["pair_type"]]
        assert row["source_repo"] == "sample"


def test_negatives_are_hard_and_never_connected(graph):
    neighbours = graph.neighbours()
    for row in rows(structural_pairs(graph, seed=3)):
        anchor, positive, negative = row["anchor_id"], row["positive_id"], row["negative_id"]
        assert negative not in (anchor, positive)
        assert negative not in neighbours[anchor]
        neg, pos = graph.nodes[negative], graph.nodes[positive]
        assert not (neg.file == pos.file and neg.start_line <= pos.end_line
                    and pos.start_line <= neg.end_line)  # fmt: skip
        if row["pair_type"] == "same_file":
            assert neg.file != graph.nodes[anchor].file
            assert graph.nodes[anchor].file == pos.file
    # an edge whose files hold an unconnected node takes its negative from there
    by_edge = {(r["anchor_id"], r["positive_id"]): r for r in rows(structural_pairs(graph))}
    call = by_edge[("shop.cart.Cart.checkout", "shop.cart.Cart.subtotal")]
    assert call["negative_id"] in {"shop.cart.Cart.__init__", "shop.cart.Cart.add",
                                   "shop.cart.make_cart"}  # fmt: skip
    # a module spans its whole file: no node of it can be a negative for it
    item = by_edge[("shop.models", "shop.models.Item")]
    assert graph.nodes[item["negative_id"]].file != "shop/models.py"


def test_same_seed_same_triplets_other_seed_other_negatives(graph):
    a, b = structural_pairs(graph, seed=1), structural_pairs(graph, seed=1)
    assert a.columns == b.columns
    c = structural_pairs(graph, seed=2)
    assert a.columns["anchor_id"] == c.columns["anchor_id"]
    assert a.columns["negative_id"] != c.columns["negative_id"]


def test_pair_types_can_be_chosen(graph):
    only = structural_pairs(graph, types=["calls", "inherits"])
    assert Counter(only.columns["pair_type"]) == {"calls": 9, "inherits": 2}
    docs = {r["positive_id"]: r for r in rows(structural_pairs(graph, types=["docstring"]))}
    total = docs["shop.models.DiscountedItem.total"]
    assert total["anchor"] == "Discounted price of `quantity` items."
    assert "Discounted price" not in total["positive"] and "round(" in total["positive"]


def test_a_repo_too_small_for_negatives_reports_them(tmp_path):
    (tmp_path / "one.py").write_text("def a():\n    b()\n\n\ndef b():\n    pass\n")
    graph = build_graph("tiny", tmp_path).graph
    pairs = structural_pairs(graph, types=["calls", "contains"])
    assert len(pairs) == 0
    assert pairs.unpaired == {
        "calls: no unconnected node for a hard negative": 1,
        "contains: no unconnected node for a hard negative": 2,
    }


def test_the_vectorized_sampler_picks_what_the_one_pair_sampler_picks(tmp_path):
    """`ArraySampler` (all pairs at once) and `NegativeSampler` (one pair per call) are the
    same rule: checked on a graph with files of more nodes than PROBES and small ones."""
    import shutil

    import numpy as np
    from bashgym_pipelines_code_graph.negatives import NONE, PROBES, ArraySampler
    from bashgym_pipelines_code_graph.pairs import NegativeSampler

    from .conftest import SAMPLE

    for i in range(4):
        shutil.copytree(SAMPLE, tmp_path / f"p{i}")
    chain = "".join(f"def f{i}():\n    f{i + 1}()\n\n\n" for i in range(PROBES + 20))
    (tmp_path / "chain.py").write_text(
        chain
        + "class Big:\n"
        + "".join(f"    def m{i}(self):\n        self.m{(i * 7) % 90}()\n" for i in range(90))
    )
    graph = build_graph("mixed", tmp_path).graph
    arrays = ArraySampler(graph)
    pairs = [(s, d, f"{kind}|{s}|{d}") for s, d, kind in graph.iter_edges()]
    pairs += [(i, i, f"doc|{i}") for i in graph.nodes]
    sides = siblings(graph)
    for seed in (0, 1, 5):
        one = NegativeSampler(graph, seed)

        def hashes(keys, seed=seed):
            return np.array([zlib.crc32(f"{seed}|{k}".encode()) for k in keys], dtype=np.int64)

        def named(picks):
            return [None if p == NONE else arrays.ids[p] for p in picks.tolist()]

        near = arrays.near(arrays.indices([a for a, _, _ in pairs]),
                           arrays.indices([p for _, p, _ in pairs]),
                           hashes([k for _, _, k in pairs]))  # fmt: skip
        assert named(near) == [one.near(a, p, k) for a, p, k in pairs]
        far = arrays.elsewhere(arrays.indices([a for a, _ in sides]),
                               arrays.indices([b for _, b in sides]),
                               hashes([f"same|{a}|{b}" for a, b in sides]))  # fmt: skip
        assert named(far) == [one.elsewhere(a, b, f"same|{a}|{b}") for a, b in sides]


def test_the_array_siblings_are_the_siblings(tmp_path, sample_repo):
    """`ArraySampler.siblings` (one sort) gives `siblings` (a key call per child) in the same
    order, children on one line included (a stable sort keeps their edge order)."""
    from bashgym_pipelines_code_graph.negatives import ArraySampler

    (sample_repo / "web" / "src" / "same.ts").write_text(
        "export const a = () => 1, b = () => 2, c = () => 3;\nexport function d() {}\n"
    )
    graph = build_graph("r", sample_repo).graph
    on_one_line = [graph.nodes[f"web/src/same.{n}"].start_line for n in "abc"]
    assert on_one_line == [1, 1, 1]
    for each in (graph, build_graph("empty", tmp_path).graph):
        arrays = ArraySampler(each)
        first, second = arrays.siblings()
        named = [(arrays.ids[a], arrays.ids[b]) for a, b in zip(first, second, strict=True)]
        assert named == siblings(each)
    assert ("web/src/same.a", "web/src/same.d") in siblings(graph)
