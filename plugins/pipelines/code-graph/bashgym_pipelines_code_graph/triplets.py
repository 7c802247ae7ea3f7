"""Finished DataDesigner rows + the graph → the output triplets (what `finalize` returns).

Structural pairs come straight from the graph. Each accepted Q&A row (it passed the citation
check and the relevance judge inside DataDesigner) gives one `qa` triplet per cited node —
the question as anchor, the node as positive, a hard negative from that node's file that the
answer did not cite — weighted by the judge's relevance score (5 → 1.0), and one
`co_relevant` pair per two nodes cited together (weight 0.7): nodes that answer the same
question belong together. Rejected rows never get here: the filter dropped them, with their
reason, before finalize.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from bashgym_designer.rubrics import scores_of

from bashgym.contracts import Generated
from bashgym.records import DroppedRow
from bashgym.text import plain
from bashgym_pipelines_code_graph.model import Graph
from bashgym_pipelines_code_graph.pairs import (
    PAIR_COLUMNS,
    NegativeSampler,
    PairSet,
    render,
    structural_pairs,
)
from bashgym_pipelines_code_graph.qa import ASK, BUDGET, CHECK, GATE, JUDGE, QUESTION, RUBRIC

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.contracts import RunContext
    from bashgym_pipelines_code_graph.options import CodeGraphPairsOptions

NAME = "code-graph-pairs"
CO_RELEVANT_WEIGHT = 0.7
QA_TYPES = ("qa", "co_relevant")
# run.json's count (any pipeline's; the report's generation stage reads it) of the rows asked
# that, besides the drops, gave no output row: the graph has no more triplets to make of them
FEWER = "fewer_than_asked"
UNCITED = "code-qa: accepted row without valid citations"


@dataclass
class GraphMemo:
    """What one run's build() learned, for its finalize(): the graphs, and what was written
    already (a top-up round must not write the structural pairs or the questions twice)."""

    graphs: dict[str, Graph]
    seed: int
    samplers: dict[str, NegativeSampler] = field(default_factory=dict)
    structural_done: bool = False
    qa_done: bool = False
    spend: Any = None

    def sampler(self, repo: str) -> NegativeSampler:
        if repo not in self.samplers:
            self.samplers[repo] = NegativeSampler(self.graphs[repo], self.seed)
        return self.samplers[repo]


def structural(memo: GraphMemo, options: CodeGraphPairsOptions, run: RunContext) -> PairSet:
    out = PairSet()
    for graph in memo.graphs.values():
        out.extend(
            structural_pairs(
                graph, seed=memo.seed, types=options.pair_types, max_chars=options.max_text_chars
            )
        )
    return out


def qa_pairs(
    row: dict[str, Any], memo: GraphMemo, options: CodeGraphPairsOptions, out: PairSet
) -> bool:
    """Add one accepted Q&A row's triplets to `out`; False when the row holds none."""
    check = plain(row.get(CHECK)) or {}
    question = (plain(row.get(QUESTION)) or {}).get("question")
    repo = str(row.get("source_repo"))
    if not check.get("valid") or not question or repo not in memo.graphs:
        return False
    graph, sampler = memo.graphs[repo], memo.sampler(repo)
    cited = [c for c in check.get("cited") or [] if c in graph.nodes]
    chosen = set(cited)
    score = scores_of(row.get(JUDGE), RUBRIC).get("relevance")
    top = max(RUBRIC.criteria[0].options)
    weight = round(score / top, 3) if score else 1.0

    def text(ident: str) -> str:
        return render(graph.nodes[ident], options.max_text_chars)

    def negative(anchor: str, positive: str, key: str) -> str | None:
        home = graph.nodes[positive].file
        pools = [sampler.by_file[home], sampler.all_ids]
        return sampler.pick(anchor, positive, key, pools, accept=lambda n: n.node_id not in chosen)

    def unpaired(kind: str) -> None:
        reason = f"{kind}: no unconnected node for a hard negative"
        out.unpaired[reason] = out.unpaired.get(reason, 0) + 1

    for node in cited:
        neg = negative(node, node, f"qa|{question}|{node}")
        if neg is None:
            unpaired("qa")
            continue
        out.add(question, text(node), text(neg), "qa", weight, repo, "", node, neg)
    for a, b in combinations(cited, 2):
        neg = negative(a, b, f"co|{a}|{b}")
        if neg is None:
            unpaired("co_relevant")
            continue
        out.add(text(a), text(b), text(neg), "co_relevant", CO_RELEVANT_WEIGHT, repo, a, b, neg)
    return True


def to_triplets(
    dataset: pd.DataFrame, memo: GraphMemo, options: CodeGraphPairsOptions, run: RunContext
) -> Generated:
    """The triplets, and each accepted Q&A row that gave none handed back whole (the hard
    negatives not found are counted only: they are triplets not made, not rows)."""
    # ~0.5 s (measured): pandas only when rows are made, not whenever the plugins load
    import pandas as pd

    out, uncited, dropped = PairSet(), 0, []
    # the round that makes the graph's pairs: a top-up's later rounds add none of them
    first = not memo.structural_done
    if first:
        out.extend(structural(memo, options, run))
        memo.structural_done = True
    if GATE in dataset.columns:
        gates = dataset[GATE].astype(str)
        skipped = int((gates == BUDGET).sum())
        if skipped:
            run.count("qa.skipped_budget", skipped)
            run.note(f"{NAME}: the Q&A budget was reached; {skipped} questions were not asked")
        for row in dataset[gates == ASK].to_dict(orient="records"):
            category = str(row.get("qa_category") or "")
            if qa_pairs(row, memo, options, out):
                run.count("qa.accepted")
                run.count(f"qa.accepted.{category}")
            else:
                run.drop(UNCITED, by=NAME)
                dropped.append(DroppedRow(NAME, UNCITED, plain(row)))
                uncited += 1
        memo.qa_done = memo.qa_done or bool((gates == ASK).any() or skipped)
    spend = memo.spend
    if spend is not None and spend.unpriced and options.budget_usd is not None:
        run.note(
            f"{NAME}: budget_usd cannot count {', '.join(sorted(spend.unpriced))} (no known "
            "price); set budget_tokens to cap them"
        )
    for reason, n in sorted(out.unpaired.items()):
        run.drop(reason, n, by=NAME)
    made = pd.DataFrame({c: out.columns[c] for c in PAIR_COLUMNS})
    written = capped(made, options.num_records, run)
    for kind, n in sorted(written["pair_type"].value_counts().items()):
        run.count(f"pairs.{kind}", int(n))
    fewer = len(dataset) - uncited - sum(out.unpaired.values()) - len(written)
    if fewer > 0:  # this round's rows that, besides the drops, gave no triplet: noted below
        run.count(FEWER, fewer)
    if first and options.num_records and len(made) < options.num_records:
        short_of(options.num_records, made, memo, run)
    elif len(written) != len(dataset):  # else 'generated' above the rows asked is unexplained
        run.note(
            f"{NAME}: {len(written)} triplets from the {len(dataset)} rows DataDesigner "
            "made (one per graph node, or -n): a triplet is a graph edge or a cited node of an "
            "accepted answer, not a row ('generated' counts triplets, pairs.* count them by "
            "type)"
        )
    return Generated(written, dropped)


def short_of(limit: int, made: pd.DataFrame, memo: GraphMemo, run: RunContext) -> None:
    """-n above what the repository yields: every triplet made is written, none padded, and
    a note says how many fewer than asked there are and why (the runner asks DataDesigner for
    -n rows; those past the graph's questions are empty placeholders, which give no triplet);
    `fewer_than_asked` counts them for the report's generation stage."""
    qa = int(made["pair_type"].isin(QA_TYPES).sum())
    nodes = sum(len(graph.nodes) for graph in memo.graphs.values())
    repos = "the repository" if len(memo.graphs) == 1 else f"the {len(memo.graphs)} repositories"
    run.note(
        f"{NAME}: -n {limit} asks for more triplets than there are: {repos} yield"
        f"{'s' if len(memo.graphs) == 1 else ''} only {len(made)} ({len(made) - qa} structural "
        f"pairs of {nodes} graph nodes, {qa} from accepted answers); all are written, "
        f"{limit - len(made)} fewer than asked (DataDesigner is asked for -n rows: those "
        "without a question are placeholders, which give no triplet and reach no sink)"
    )


def capped(made: pd.DataFrame, limit: int | None, run: RunContext) -> pd.DataFrame:
    """At most `limit` (-n) triplets: the Q&A ones first (each was paid for), then structural
    pairs spread evenly over their list, which runs type by type and file by file (its head
    would be all `contains`). The rest are counted (`pairs.left_out`) and said in a note: -n
    is "rows to generate", and this pipeline's rows are triplets."""
    if limit is None or len(made) <= limit:
        return made
    is_qa = made["pair_type"].isin(QA_TYPES).to_numpy()
    qa = [i for i, q in enumerate(is_qa) if q][:limit]
    rest = [i for i, q in enumerate(is_qa) if not q]
    room = limit - len(qa)
    chosen = sorted(qa + [rest[i * len(rest) // room] for i in range(room)])
    left = len(made) - len(chosen)
    run.count("pairs.left_out", left)
    run.note(
        f"{NAME}: -n {limit} wrote {len(chosen)} of the {len(made)} triplets made ({left} left "
        "out: Q&A triplets first, then structural pairs spread over the types; without -n all "
        "are written)"
    )
    return made.iloc[chosen].reset_index(drop=True)
