"""BashGym code graphs: the `code-repo` source (repositories → graph rows), the
`code-graph-pairs` pipeline (graph → embedding triplets) and `bashgym graph stats|inspect`.

One distribution registers all three because they share the graph model (`model.py`): the
rows the source writes are exactly what the pipeline and the commands read.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_code_graph.build import BuildResult, build_graph
from bashgym_pipelines_code_graph.model import (
    EDGE_TYPES,
    GRAPH_COLUMNS,
    Graph,
    Node,
    graph_rows,
    graphs_from_rows,
)
from bashgym_pipelines_code_graph.pairs import PAIR_COLUMNS, STRUCTURAL_TYPES, structural_pairs

__all__ = [
    "EDGE_TYPES",
    "GRAPH_COLUMNS",
    "PAIR_COLUMNS",
    "STRUCTURAL_TYPES",
    "BuildResult",
    "Graph",
    "Node",
    "build_graph",
    "graph_rows",
    "graphs_from_rows",
    "structural_pairs",
]


@hookimpl
def register_sources(register):
    # Each registration imports its module when called: ~0.14 s, ~0.18 s and ~0.13 s on top of
    # this package (pandas, DataDesigner, typer; measured), which the spawned parse workers
    # (they import this package) and every command that never collects the registry would pay.
    from bashgym_pipelines_code_graph.source import CodeRepoSource

    register("code-repo", CodeRepoSource())


@hookimpl
def register_pipelines(register):
    from bashgym_pipelines_code_graph.pipeline import CodeGraphPairsPipeline  # (see above)

    register("code-graph-pairs", CodeGraphPairsPipeline())


@hookimpl
def register_commands(app):
    from bashgym_pipelines_code_graph.commands import register  # (see above)

    register(app)
