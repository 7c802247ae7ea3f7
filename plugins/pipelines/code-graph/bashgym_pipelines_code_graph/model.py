"""The code graph: nodes (module, class, function, method) and typed edges between them.

One model is shared by the `code-repo` source (which writes a graph as rows), the
`code-graph-pairs` pipeline (which reads those rows back) and the `bashgym graph` commands, so
the three agree on every column. A graph travels as one row per node with its outgoing edges
as lists of node ids (an adjacency list): it survives a Parquet or CSV round trip, the engine's
secret scrubbing and DataDesigner's seed handling with no second table to keep in step.

Node ids are qualified names: `pkg.mod`, `pkg.mod.Class`, `pkg.mod.Class.method` for Python
(as `import` spells them), and the file path without its extension for TypeScript/JavaScript
modules (`web/src/api`), with members after a dot (`web/src/api.Client.get`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

NODE_KINDS = ("module", "class", "function", "method")
EDGE_TYPES = ("contains", "calls", "imports", "inherits")
NODE_COLUMNS = (
    "repo", "node_id", "kind", "name", "language", "file", "start_line", "end_line",
    "signature", "docstring", "doc_start", "doc_end", "source",
)  # fmt: skip
GRAPH_COLUMNS = (*NODE_COLUMNS, *EDGE_TYPES)


@dataclass(slots=True)
class Node:
    """One definition. `source` is its text (capped by the source's `max_source_chars`);
    `doc_start`/`doc_end` are the docstring's lines (0 when it has none inside its source, as
    for a JSDoc comment, which sits before the declaration)."""

    node_id: str
    kind: str
    name: str
    language: str
    file: str
    start_line: int
    end_line: int
    signature: str = ""
    docstring: str = ""
    source: str = ""
    doc_start: int = 0
    doc_end: int = 0

    def __reduce__(self) -> tuple[type[Node], tuple[object, ...]]:
        # Parsed files come back from worker processes pickled: a plain tuple of fields is
        # several times cheaper to pickle and unpickle than a slotted dataclass's state dict.
        return Node, (
            self.node_id, self.kind, self.name, self.language, self.file, self.start_line,
            self.end_line, self.signature, self.docstring, self.source, self.doc_start,
            self.doc_end,
        )  # fmt: skip

    def code(self) -> str:
        """The source without its docstring (what a docstring → code search must find)."""
        if not self.doc_start:
            return self.source
        lines = self.source.split("\n")
        first, last = self.doc_start - self.start_line, self.doc_end - self.start_line
        return "\n".join(lines[:first] + lines[last + 1 :])


@dataclass
class Graph:
    """One repository's graph. `edges[type]` holds (source id, target id) pairs, each once."""

    repo: str
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[str, list[tuple[str, str]]] = field(
        default_factory=lambda: {t: [] for t in EDGE_TYPES}
    )

    def edge_count(self) -> int:
        return sum(len(v) for v in self.edges.values())

    def iter_edges(self) -> Iterator[tuple[str, str, str]]:
        """(source, target, type), in EDGE_TYPES order then insertion order."""
        for kind in EDGE_TYPES:
            for src, dst in self.edges[kind]:
                yield src, dst, kind

    def neighbours(self) -> dict[str, set[str]]:
        """Every node's neighbours, either direction, any edge type."""
        out: dict[str, set[str]] = {n: set() for n in self.nodes}
        for src, dst, _ in self.iter_edges():
            out[src].add(dst)
            out[dst].add(src)
        return out

    def by_file(self) -> dict[str, list[str]]:
        """Node ids per file, in the order they were added (file order, then line order)."""
        out: dict[str, list[str]] = {}
        for node in self.nodes.values():
            out.setdefault(node.file, []).append(node.node_id)
        return out


def graph_rows(graph: Graph) -> list[dict[str, Any]]:
    """One row per node (GRAPH_COLUMNS): the node's fields and its outgoing edges by type."""
    outgoing: dict[str, dict[str, list[str]]] = {
        n: {t: [] for t in EDGE_TYPES} for n in graph.nodes
    }
    for src, dst, kind in graph.iter_edges():
        outgoing[src][kind].append(dst)
    rows = []
    for node in graph.nodes.values():
        row: dict[str, Any] = {"repo": graph.repo}
        row.update({c: getattr(node, c) for c in NODE_COLUMNS[1:]})
        row.update(outgoing[node.node_id])
        rows.append(row)
    return rows


def _as_list(value: Any) -> list[str]:
    """A list cell as read back from pandas, Parquet (numpy arrays) or CSV/JSON (JSON text)."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        parsed = json.loads(text) if text.startswith("[") else [text]
        return [str(v) for v in parsed]
    if isinstance(value, float):  # NaN: no list
        return []
    return [str(v) for v in list(value)]


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def graphs_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, Graph]:
    """Graphs by repository from node rows (as `graph_rows` writes them).

    Edges to ids that have no row are left out: a row set cut down by hand (or by `-n`) still
    gives a consistent graph.
    """
    graphs: dict[str, Graph] = {}
    pending: list[tuple[Graph, str, str, str]] = []
    for row in rows:
        repo = _text(row.get("repo")) or "repo"
        graph = graphs.get(repo) or graphs.setdefault(repo, Graph(repo))
        node = Node(
            node_id=str(row["node_id"]),
            kind=_text(row.get("kind")) or "function",
            name=_text(row.get("name")),
            language=_text(row.get("language")),
            file=_text(row.get("file")),
            start_line=_int(row.get("start_line")),
            end_line=_int(row.get("end_line")),
            signature=_text(row.get("signature")),
            docstring=_text(row.get("docstring")),
            source=_text(row.get("source")),
            doc_start=_int(row.get("doc_start")),
            doc_end=_int(row.get("doc_end")),
        )
        graph.nodes[node.node_id] = node
        for kind in EDGE_TYPES:
            for target in _as_list(row.get(kind)):
                pending.append((graph, kind, node.node_id, target))
    for graph, kind, src, dst in pending:
        if dst in graph.nodes:
            graph.edges[kind].append((src, dst))
    return graphs
