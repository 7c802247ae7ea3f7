"""The shipped sample repository gives exactly the expected nodes and edges."""

from __future__ import annotations

import shutil

import pytest
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.repos import RepoSpec, checkout

from bashgym.contracts import InputError

NODES = {
    "shop": "module", "shop.models": "module", "shop.models.Item": "class",
    "shop.models.Item.__init__": "method", "shop.models.Item.total": "method",
    "shop.models.DiscountedItem": "class", "shop.models.DiscountedItem.total": "method",
    "shop.pricing": "module", "shop.pricing.apply_tax": "function",
    "shop.cart": "module", "shop.cart.Cart": "class", "shop.cart.Cart.__init__": "method",
    "shop.cart.Cart.add": "method", "shop.cart.Cart.subtotal": "method",
    "shop.cart.Cart.checkout": "method", "shop.cart.make_cart": "function",
    "web/src/api": "module", "web/src/api.BaseClient": "class",
    "web/src/api.BaseClient.constructor": "method", "web/src/api.BaseClient.get": "method",
    "web/src/api.PriceClient": "class", "web/src/api.PriceClient.price": "method",
    "web/src/format": "module", "web/src/format.formatPrice": "function",
    "web/src/format.double": "function", "web/src/main": "module",
    "web/src/main.main": "function",
}  # fmt: skip
CONTAINS = {
    ("shop.models", "shop.models.Item"), ("shop.models.Item", "shop.models.Item.__init__"),
    ("shop.models.Item", "shop.models.Item.total"), ("shop.models", "shop.models.DiscountedItem"),
    ("shop.models.DiscountedItem", "shop.models.DiscountedItem.total"),
    ("shop.pricing", "shop.pricing.apply_tax"), ("shop.cart", "shop.cart.Cart"),
    ("shop.cart.Cart", "shop.cart.Cart.__init__"), ("shop.cart.Cart", "shop.cart.Cart.add"),
    ("shop.cart.Cart", "shop.cart.Cart.subtotal"), ("shop.cart.Cart", "shop.cart.Cart.checkout"),
    ("shop.cart", "shop.cart.make_cart"), ("web/src/api", "web/src/api.BaseClient"),
    ("web/src/api.BaseClient", "web/src/api.BaseClient.constructor"),
    ("web/src/api.BaseClient", "web/src/api.BaseClient.get"),
    ("web/src/api", "web/src/api.PriceClient"),
    ("web/src/api.PriceClient", "web/src/api.PriceClient.price"),
    ("web/src/format", "web/src/format.formatPrice"), ("web/src/format", "web/src/format.double"),
    ("web/src/main", "web/src/main.main"),
}  # fmt: skip
CALLS = {
    ("shop.cart.Cart.checkout", "shop.pricing.apply_tax"),  # a relative import
    ("shop.cart.Cart.checkout", "shop.cart.Cart.subtotal"),  # self.method
    ("shop.cart.make_cart", "shop.cart.Cart"),  # same module
    ("shop.cart.make_cart", "shop.models.Item"),  # an absolute import
    ("web/src/api.PriceClient.price", "web/src/format.formatPrice"),  # named ES import
    ("web/src/api.PriceClient.price", "web/src/api.BaseClient.get"),  # this.x, from the base
    ("web/src/format.double", "web/src/format.formatPrice"),  # an arrow function's call
    ("web/src/main.main", "web/src/api.PriceClient"),  # `new`, JS importing TS
    ("web/src/main", "web/src/main.main"),  # a module-level call
}
IMPORTS = {
    ("shop.cart", "shop.models.Item"), ("shop.cart", "shop.pricing.apply_tax"),
    ("web/src/api", "web/src/format.formatPrice"), ("web/src/main", "web/src/api.PriceClient"),
}  # fmt: skip
INHERITS = {
    ("shop.models.DiscountedItem", "shop.models.Item"),
    ("web/src/api.PriceClient", "web/src/api.BaseClient"),
}


def test_sample_repo_gives_exactly_the_expected_graph(sample_repo):
    built = build_graph("sample", sample_repo)
    graph = built.graph
    assert {n: node.kind for n, node in graph.nodes.items()} == NODES
    assert set(graph.edges["contains"]) == CONTAINS
    assert set(graph.edges["calls"]) == CALLS
    assert set(graph.edges["imports"]) == IMPORTS
    assert set(graph.edges["inherits"]) == INHERITS
    assert graph.edge_count() == len(CONTAINS) + len(CALLS) + len(IMPORTS) + len(INHERITS)
    # files that fail to parse are counted and reported, never fatal
    assert built.files == 9
    assert sorted(f for f, _ in built.failed) == ["shop/broken.py", "web/src/bad.ts"]
    assert "SyntaxError" in dict(built.failed)["shop/broken.py"]
    # builtins, locals and third-party names are left out, and counted
    assert built.resolution.unresolved["calls"] > 0


def test_node_fields_come_from_the_source(sample_repo):
    graph = build_graph("sample", sample_repo).graph
    total = graph.nodes["shop.models.DiscountedItem.total"]
    assert (total.file, total.start_line, total.end_line) == ("shop/models.py", 19, 21)
    assert total.signature == "def total(self, quantity: int) -> float:"
    assert total.docstring == "Discounted price of `quantity` items."
    assert total.source.startswith("    def total(") and "0.9" in total.source
    assert '"""' not in total.code() and "round(" in total.code()
    price = graph.nodes["web/src/api.PriceClient.price"]
    assert price.docstring == "The price of an item, formatted."  # its JSDoc
    assert price.signature == "async price(id: string): Promise<string>"
    assert (price.language, price.start_line, price.end_line) == ("typescript", 17, 20)
    assert graph.nodes["web/src/main.main"].language == "javascript"
    assert graph.nodes["web/src/api"].docstring == "HTTP client for the shop API."
    assert graph.nodes["web/src/format"].docstring == ""  # that comment is formatPrice's


def test_only_tracked_files_are_read_and_a_ref_reads_an_older_commit(
    sample_repo, tmp_path, git_cmd
):
    git = git_cmd
    first = git(sample_repo, "rev-parse", "HEAD")
    (sample_repo / "shop" / "extra.py").write_text("def later():\n    return 1\n")
    (sample_repo / "shop" / "untracked.py").write_text("def ignored():\n    return 2\n")
    git(sample_repo, "add", "shop/extra.py")
    git(sample_repo, "commit", "-q", "-m", "extra")

    now = checkout(RepoSpec(str(sample_repo)), tmp_path / "clones")
    assert "shop/extra.py" in now.files and "shop/untracked.py" not in now.files
    assert now.root == sample_repo and now.commit == git(sample_repo, "rev-parse", "HEAD")

    old = checkout(RepoSpec(f"file://{sample_repo}", ref=first), tmp_path / "clones")
    assert old.commit == first and old.root != sample_repo
    assert "shop/extra.py" not in old.files and "shop/cart.py" in old.files
    graph = build_graph("sample", old.root, old.files).graph
    assert "shop.extra.later" not in graph.nodes and "shop.cart.Cart" in graph.nodes


def test_unreadable_repositories_are_named(tmp_path, repo_factory):
    with pytest.raises(InputError, match="is not a folder"):
        checkout(RepoSpec(str(tmp_path / "missing")), tmp_path / "clones")
    repo = repo_factory(tmp_path / "r", broken=False)
    with pytest.raises(InputError, match="at 'no-such-ref'"):
        checkout(RepoSpec(str(repo), ref="no-such-ref"), tmp_path / "clones")


def test_workers_give_the_same_graph(sample_repo):
    one = build_graph("sample", sample_repo, workers=1).graph
    two = build_graph("sample", sample_repo, workers=2).graph
    assert list(one.nodes) == list(two.nodes)
    assert one.edges == two.edges


def test_processes_sharing_the_parse_give_the_same_graph_and_pairs(tmp_path, monkeypatch):
    """Enough files for the spawned-worker path (the sample repo alone is parsed inline): the
    sample copied into 16 packages, a file that fails to parse among them, and a module beside
    a package of the same name (one of them is renamed, in the worker that parsed it too).
    This process parses slowly, so that the workers get their share of such small files."""
    import time

    from bashgym_pipelines_code_graph import shared
    from bashgym_pipelines_code_graph.pairs import structural_pairs

    from .conftest import BROKEN, SAMPLE

    for i in range(16):
        shutil.copytree(SAMPLE, tmp_path / f"p{i}")
    for rel, text in BROKEN.items():
        (tmp_path / "p3" / rel).write_text(text)
    calling = "def {0}():\n    return {1}()\n\n\ndef {1}():\n    pass\n"
    (tmp_path / "p0" / "shop.py").write_text(calling.format("shop", "helper"))
    (tmp_path / "p0" / "shop" / "__init__.py").write_text(calling.format("top", "inner"))
    one = build_graph("many", tmp_path, workers=1)
    assert len(one.graph.nodes) > 16 * 20 and one.failed
    assert one.resolution.renamed_modules == ["p0/shop/__init__.py"]
    assert ("p0.shop.shop", "p0.shop.helper") in one.graph.edges["calls"]
    renamed = "p0/shop/__init__.py"
    assert (f"{renamed}.top", f"{renamed}.inner") in one.graph.edges["calls"]
    parse_chunk = shared.parse_chunk

    def parse_slowly(jobs):
        time.sleep(0.01)
        return parse_chunk(jobs)

    monkeypatch.setattr(shared, "parse_chunk", parse_slowly)
    for workers in (2, 3):
        other = build_graph("many", tmp_path, workers=workers)
        assert other.graph.nodes == one.graph.nodes
        assert list(other.graph.nodes) == list(one.graph.nodes)
        assert other.graph.edges == one.graph.edges
        assert list(other.resolution.unresolved.items()) == list(one.resolution.unresolved.items())
        assert other.resolution.renamed_modules == one.resolution.renamed_modules
        assert (other.failed, other.skipped) == (one.failed, one.skipped)
        pairs = structural_pairs(other.graph, seed=3)
        assert pairs.rows == structural_pairs(one.graph, seed=3).rows
        assert pairs.unpaired == structural_pairs(one.graph, seed=3).unpaired


def test_a_worker_chunk_that_cannot_be_written_comes_back_whole(sample_repo, tmp_path):
    from bashgym_pipelines_code_graph.build import ParseJob, parse_chunk
    from bashgym_pipelines_code_graph.shared import read_heads, write_heads

    files = ("shop/cart.py", "shop/models.py")
    parsed = parse_chunk([ParseJob(str(sample_repo), p, 4000, 1_000_000) for p in files])
    written = write_heads(parsed, str(tmp_path / "chunk"))
    assert written == str(tmp_path / "chunk")
    kept = read_heads(written)
    assert not (tmp_path / "chunk").exists()  # removed once read
    assert [f.nodes for f in kept] == [f.nodes for f in parsed]
    assert [f.contains for f in kept] == [f.contains for f in parsed]
    unwritable = write_heads(parsed, str(tmp_path / "no-such-folder" / "chunk"))
    assert isinstance(unwritable, list)
    assert [f.nodes for f in read_heads(unwritable)] == [f.nodes for f in kept]


def test_a_worker_that_dies_costs_time_not_files(tmp_path, monkeypatch):
    """The worker is killed once it has sent a chunk: what it sent (its references were still
    there) and what it was parsing are parsed again in this process, and the graph is the one
    a single process builds."""
    import time

    from bashgym_pipelines_code_graph import shared

    from .conftest import SAMPLE

    for i in range(16):
        shutil.copytree(SAMPLE, tmp_path / f"p{i}")
    one = build_graph("many", tmp_path, workers=1)
    receive, parse_chunk, killed = shared.Crew.receive, shared.parse_chunk, []

    def parse_slowly(jobs):  # in this process only: the worker gets a share once it is up
        if not killed:
            time.sleep(0.05)
        return parse_chunk(jobs)

    def receive_then_kill(crew, heads, *, wait):
        receive(crew, heads, wait=wait)
        if not killed and any(crew.owned.values()):
            for process in crew.processes:
                process.kill()
                process.join()
                killed.append(process.exitcode)

    monkeypatch.setattr(shared.Crew, "receive", receive_then_kill)
    monkeypatch.setattr(shared, "parse_chunk", parse_slowly)
    other = build_graph("many", tmp_path, workers=2)
    assert killed and killed[0] != 0
    assert list(other.graph.nodes) == list(one.graph.nodes)
    assert other.graph.nodes == one.graph.nodes
    assert other.graph.edges == one.graph.edges
    assert other.resolution.unresolved == one.resolution.unresolved
    assert (other.failed, other.skipped) == (one.failed, one.skipped)
