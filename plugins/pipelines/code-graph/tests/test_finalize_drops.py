"""finalize hands back, whole, each accepted Q&A row that gives no triplet (dropped.jsonl), as
run.json counts it; the hard negatives it could not find are triplets not made, not rows, and
are only counted."""

from __future__ import annotations

import pandas as pd
from bashgym_pipelines_code_graph.options import CodeGraphPairsOptions
from bashgym_pipelines_code_graph.qa import ASK, CHECK, GATE, QUESTION
from bashgym_pipelines_code_graph.triplets import NAME, GraphMemo, to_triplets

from bashgym.contracts import RunContext
from bashgym.settings import Settings


def test_an_accepted_row_without_valid_citations_is_handed_back(tmp_path):
    run = RunContext(run_dir=tmp_path / "run", settings=Settings())
    memo = GraphMemo(graphs={}, seed=0, structural_done=True)  # a later round: no pairs to add
    dataset = pd.DataFrame(
        {
            GATE: [ASK],
            QUESTION: [{"question": "Which function parses the config?"}],
            CHECK: [{"valid": False, "cited": []}],
            "source_repo": ["shop"],
        }
    )
    out = to_triplets(dataset, memo, CodeGraphPairsOptions(), run)
    assert out.dataset.empty
    assert run.dropped == {f"{NAME}: code-qa: accepted row without valid citations": 1}
    (row,) = out.dropped
    assert (row.by, row.reason) == (NAME, "code-qa: accepted row without valid citations")
    assert row.row[QUESTION] == {"question": "Which function parses the config?"}
    assert row.row["source_repo"] == "shop"
