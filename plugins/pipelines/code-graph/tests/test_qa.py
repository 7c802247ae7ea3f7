"""The Q&A stage on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
from bashgym_testing.server import Reply

FOCUS = re.compile(r"Focus node: (\S+)")
BOGUS = "shop.cart.Cart.nonexistent"


def focus(request) -> str:
    return FOCUS.search(request.last_user_text).group(1)


def is_question(request) -> bool:
    return request.last_user_text.startswith("You write questions")


def is_answer(request) -> bool:
    return request.last_user_text.startswith("Answer the question about this code")


def is_judge(request) -> bool:
    return request.last_user_text.startswith("You review question/answer pairs")


def script(server, *, bad: set[str], low: set[str]) -> None:
    """Questions name their focus node; answers cite it and (for `bad` foci) a node that does
    not exist; the judge scores answers about `low` foci 2, the others 5."""

    def ask(request) -> Reply:
        node = focus(request)
        body = {"question": f"What does {node} do?", "nodes": [node]}
        return Reply(json.dumps(body))

    def answer(request) -> Reply:
        node = focus(request)
        cited = [node, BOGUS] if node in bad else [node]
        return Reply(json.dumps({"answer": f"{node} does its job.", "cited_nodes": cited}))

    def judge(request) -> Reply:
        node = re.search(r"What does (\S+) do\?", request.last_user_text).group(1)
        score = 2 if node in low else 5
        return Reply(json.dumps({"relevance": {"reasoning": "scripted", "score": score}}))

    server.add_rule(is_question, ask)
    server.add_rule(is_answer, answer)
    server.add_rule(is_judge, judge)


def run_qa(bashgym_cli, repo, out, *extra):
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={repo}", "-p", "code-graph-pairs",
        "--set", "pipeline.questions_per_repo=40", *extra, "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "run.json").read_text())


def test_answers_citing_nonexistent_nodes_are_rejected(
    scripted_models, bashgym_cli, sample_repo, tmp_path
):
    server = scripted_models.server
    script(server, bad={"shop.cart.Cart"}, low={"shop.cart.make_cart"})
    summary = run_qa(bashgym_cli, sample_repo, tmp_path / "run")
    asked = sorted(focus(r) for r in server.completions if is_question(r))
    print(asked)
    print(json.dumps(summary["counts"], indent=1))
    frame = pq.read_table(tmp_path / "run" / "data.parquet").to_pandas()
    print(
        frame[frame.pair_type.isin(["qa", "co_relevant"])][
            ["pair_type", "weight", "anchor", "positive_id", "negative_id"]
        ].to_string()
    )
    print([r.last_user_text[:300] for r in server.completions if is_judge(r)][:1])
