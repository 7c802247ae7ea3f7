"""The Q&A stage's parts: which nodes are asked about, what the model is shown, the answer
shapes, the programmatic citation check, the relevance rubric and the cost gate.

Selection is deterministic: a repository's candidates (nodes with at least two neighbours, so
there is structure to ask about) are ordered by a stable hash of the run seed and their id,
the first `questions_per_repo` are taken, and categories are dealt in turn. The model sees a
focus node and its neighbourhood, each node under its exact id; it must name ids in the
question and cite ids in the answer, and `check_citations` rejects any id the graph does not
hold before a judge is paid to read it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bashgym_designer.rubrics import Criterion, Rubric
from pydantic import BaseModel, Field

from bashgym.contracts import Model
from bashgym.text import plain
from bashgym_pipelines_code_graph.model import Graph, Node
from bashgym_pipelines_code_graph.pairs import stable_index

MAX_NEIGHBOURS = 24
MAX_FOCUS_CHARS = 1500

GATE, QUESTION, ANSWER, CHECK, JUDGE = "qa_gate", "question", "answer", "qa_check", "relevance"
ASK, NONE, BUDGET = "ask", "none", "budget"

CATEGORY_GUIDE = {
    "architecture": "how the code is organised: what contains what, which classes extend "
    "which, how modules fit together",
    "dependencies": "what a piece of code imports, calls or relies on, and what relies on it",
    "navigation": "where something is defined, or which function/class implements a behaviour",
    "understanding": "what a piece of code does, and why, in terms of the code around it",
}


class Question(BaseModel):
    question: str = Field(description="One question a developer would ask about this code.")
    nodes: list[str] = Field(description="Exact ids of the nodes the question names.")


class Answer(BaseModel):
    answer: str = Field(description="The answer, in a few sentences.")
    cited_nodes: list[str] = Field(
        description="Exact ids of every node the answer relies on (the nodes that answer it)."
    )


RUBRIC = Rubric(
    name="code-qa",
    description="A question about a code repository and an answer citing the repo's nodes.",
    instructions=(
        "You review question/answer pairs written about a code repository. They will teach a "
        "code-search model to find, for such a question, exactly the cited nodes (modules, "
        "classes, functions, methods). Judge against the context shown."
    ),
    criteria=[
        Criterion(
            name="relevance",
            description="Would a developer asking this question want to be shown exactly the "
            "cited nodes, and does the answer, read with them, answer it correctly?",
            options={
                5: "The cited nodes are exactly what answers the question; the answer is right.",
                4: "The cited nodes answer it; one is marginal or the answer is slightly loose.",
                3: "Mostly relevant nodes; the answer is right in substance.",
                2: "The nodes are only loosely related, or the answer is partly wrong.",
                1: "The nodes do not answer the question, or the answer is wrong.",
            },
        )
    ],
)


def candidates(graph: Graph) -> list[str]:
    neighbours = graph.neighbours()
    return [n for n in graph.nodes if len(neighbours[n]) >= 2]


def select(graph: Graph, seed: int, count: int, categories: list[str]) -> list[tuple[str, str]]:
    """(node id, category) for the questions asked about `graph`."""
    pool = candidates(graph)
    pool.sort(key=lambda n: (stable_index(seed, f"qa|{n}", 2**31), n))
    return [(n, categories[i % len(categories)]) for i, n in enumerate(pool[:count])]


def _summary(node: Node) -> str:
    doc = node.docstring.strip().split("\n\n")[0].replace("\n", " ")
    head = node.signature or f"{node.kind} in {node.file}"
    return f"{head}  {doc[:160]}".strip()


def relations(graph: Graph, focus: str) -> list[tuple[str, str]]:
    """(node id, how it relates to `focus`) for its neighbours, outgoing edges first."""
    out: dict[str, str] = {}
    words = {"contains": ("contains", "is contained in"), "calls": ("calls", "is called by"),
             "imports": ("imports", "is imported by"),
             "inherits": ("inherits from", "is inherited by")}  # fmt: skip
    for src, dst, kind in graph.iter_edges():
        if src == focus and dst not in out:
            out[dst] = f"the focus node {words[kind][0]} it"
        elif dst == focus and src not in out:
            out[src] = f"the focus node {words[kind][1]} it"
    return list(out.items())[:MAX_NEIGHBOURS]


def context(graph: Graph, focus: str) -> str:
    """What the model is shown about `focus`: the node, its source, and its neighbourhood."""
    node = graph.nodes[focus]
    lines = [
        f"Repository: {graph.repo}",
        f"Focus node: {focus} ({node.kind} in {node.file}, lines "
        f"{node.start_line}-{node.end_line})",
        "",
        "Source of the focus node:",
        node.source[:MAX_FOCUS_CHARS],
        "",
        "Related nodes (exact id: relation; signature and summary):",
    ]
    for ident, relation in relations(graph, focus):
        lines.append(f"- {ident}: {relation}; {_summary(graph.nodes[ident])}")
    return "\n".join(lines)


QUESTION_PROMPT = """\
You write questions a developer would ask about a code repository, to train a code search \
model. Here is part of the repository, every node under its exact id.

<context>
{{ qa_context }}
</context>

Category: {{ qa_category }} — questions about {{ qa_guide }}.

Write one {{ qa_category }} question about the focus node and its related nodes.
- Name at least one node in the question by its exact id, and list every id you name in `nodes`.
- Ask what the context above can answer. No preamble, one question."""

ANSWER_PROMPT = """\
Answer the question about this code repository using only the context below.

<context>
{{ qa_context }}
</context>

Question: {{ question.question }}

- Answer in a few sentences.
- In `cited_nodes`, list the exact id of every node your answer relies on: the nodes a \
developer asking this should be shown. Use ids exactly as written in the context."""

JUDGE_PROMPT = """\
{instructions}

<context>
{{{{ qa_context }}}}
</context>

<question>
{{{{ question.question }}}}
</question>

<answer>
{{{{ answer.answer }}}}

Cited nodes: {{{{ answer.cited_nodes }}}}
</answer>
"""


def judge_prompt() -> str:
    return JUDGE_PROMPT.format(instructions=RUBRIC.instructions)


def _ids(value: Any, key: str) -> list[str]:
    value = plain(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    items = value.get(key) if isinstance(value, Mapping) else None
    return [str(i).strip().strip("`") for i in items or [] if str(i).strip()]


PROBLEMS = {
    "question_names_none": "the question names no node",
    "answer_cites_none": "the answer cites no node",
    "nonexistent": "cites nodes that do not exist in the graph",
}


def check_citations(row: Mapping[str, Any], known: Mapping[str, set[str]]) -> dict[str, Any]:
    """Every node the question names and the answer cites must exist in the row's repo."""
    ids = known.get(str(row.get("source_repo")), set())
    named, cited = _ids(row.get(QUESTION), "nodes"), _ids(row.get(ANSWER), "cited_nodes")
    missing = sorted({i for i in [*named, *cited] if i not in ids})
    problem = (
        "nonexistent" if missing
        else "question_names_none" if not named
        else "answer_cites_none" if not cited
        else ""
    )  # fmt: skip
    return {"valid": not problem, "problem": problem, "missing": missing,
            "cited": list(dict.fromkeys(cited))}  # fmt: skip


class Spend:
    """Tokens and dollars the Q&A models have used so far, read from DataDesigner's own
    per-model counters (the facades its LLM columns call through, keyed by alias) and priced
    by the run's model for that alias (`Model.cost`)."""

    def __init__(self, priced: Mapping[str, Model]) -> None:
        self.priced = priced
        self.unpriced: set[str] = set()

    def __call__(self, models: Mapping[str, Any]) -> tuple[int, float]:
        tokens, dollars = 0, 0.0
        for alias, facade in models.items():
            usage = facade.usage_stats.token_usage
            used = int(usage.input_tokens or 0) + int(usage.output_tokens or 0)
            tokens += used
            price = self.priced[alias].cost(int(usage.input_tokens or 0),
                                            int(usage.output_tokens or 0))  # fmt: skip
            if price is None:
                if used:
                    self.unpriced.add(str(facade.model_name))
            else:
                dollars += price
        return tokens, dollars
