"""The Q&A stage on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest


def run_qa(bashgym_cli, repo, out, *extra):
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={repo}", "-p", "code-graph-pairs",
        "--set", "pipeline.questions_per_repo=40", *extra, "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "run.json").read_text())


def judged(server, qa_model) -> list[str]:
    return [
        re.search(r"What does (\S+) do\?", r.last_user_text).group(1)
        for r in server.completions
        if qa_model.is_judge(r)
    ]


@pytest.mark.slow
def test_answers_citing_nonexistent_nodes_are_rejected(
    scripted_models, bashgym_cli, sample_repo, tmp_path, qa_model
):
    server = scripted_models.server
    checkout, tax = "shop.cart.Cart.checkout", "shop.pricing.apply_tax"
    qa_model.script(
        server,
        bad={"shop.cart.Cart"},
        low={"shop.cart.make_cart"},
        four={checkout},
        pairs={checkout: [tax]},
    )
    out = tmp_path / "run"
    summary = run_qa(bashgym_cli, sample_repo, out)
    asked = sorted(qa_model.focus(r) for r in server.completions if qa_model.is_question(r))
    assert len(asked) == 19 and len(set(asked)) == 19  # every node with 2+ neighbours, once
    # checked in code first: the judge never reads the answer citing a nonexistent node
    assert "shop.cart.Cart" not in judged(server, qa_model)
    assert sorted(judged(server, qa_model)) == sorted(a for a in asked if a != "shop.cart.Cart")
    counts = summary["counts"]
    assert counts["dropped"] == {
        "filter code-graph-qa: code-qa: cites nodes that do not exist in the graph": 1,
        "filter code-graph-qa: code-qa: relevance below 3": 1,
    }
    assert counts["qa.accepted"] == 17
    assert sum(counts[f"qa.accepted.{c}"] for c in
               ("architecture", "dependencies", "navigation", "understanding")) == 17  # fmt: skip
    dropped = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert {d["row"]["node_id"] for d in dropped} == {"shop.cart.Cart", "shop.cart.make_cart"}

    frame = pq.read_table(out / "data.parquet").to_pandas()
    qa = frame[frame["pair_type"] == "qa"]
    assert len(qa) == 18 == counts["pairs.qa"]  # 17 answers, one citing two nodes
    assert qa_model.BOGUS not in set(frame["positive_id"]) | set(frame["negative_id"])
    assert not set(qa["positive_id"]) & {"shop.cart.Cart", "shop.cart.make_cart"}
    about = qa[qa["anchor"] == f"What does {checkout} do?"]
    assert sorted(about["positive_id"]) == sorted([checkout, tax])
    assert set(about["weight"]) == {0.8}  # judge score 4 of 5
    assert set(qa[qa["anchor"] != f"What does {checkout} do?"]["weight"]) == {1.0}
    assert set(about["negative_id"]).isdisjoint({checkout, tax})
    co = frame[frame["pair_type"] == "co_relevant"]
    assert co[["anchor_id", "positive_id"]].values.tolist() == [[checkout, tax]]
    assert co["weight"].tolist() == [0.7]
    # structural pairs are all there, whatever the Q&A stage did
    assert counts["pairs.calls"] == 9 and counts["pairs.contains"] == 20

    stats = json.loads(bashgym_cli("graph", "stats", out, "--json").stdout)
    assert stats["qa"] == {"accepted": 17, "rejected": 2, "skipped_budget": 0}
    assert stats["tokens"]["input"] > 0 and stats["pairs_by_type"]["qa"] == 18


def test_the_budget_stops_the_llm_stage(
    scripted_models, bashgym_cli, sample_repo, tmp_path, qa_model
):
    server = scripted_models.server
    qa_model.script(server)
    summary = run_qa(
        bashgym_cli, sample_repo, tmp_path / "run",
        "--set", "pipeline.budget_tokens=1",
        "--set", "designer.buffer_size=1", "--set", "designer.max_concurrent_row_groups=1",
    )  # fmt: skip
    asked = [qa_model.focus(r) for r in server.completions if qa_model.is_question(r)]
    counts = summary["counts"]
    assert 1 <= len(asked) < 19
    assert counts["qa.skipped_budget"] == 19 - len(asked)
    assert counts["qa.accepted"] == len(asked)
    assert any("budget was reached" in n for n in summary["notes"])
    assert counts["pairs.calls"] == 9  # structural pairs are always written


def test_a_dollar_budget_prices_tokens_with_the_models_list_price(
    scripted_models, bashgym_cli, sample_repo, tmp_path, monkeypatch, qa_model
):
    # the scripted server answers any model id: name one litellm has a price for
    monkeypatch.setenv("BASHGYM_MODELS__DEFAULT__MODEL", "gpt-4o-mini")
    monkeypatch.setenv("BASHGYM_MODELS__JUDGE__MODEL", "gpt-4o-mini")
    qa_model.script(scripted_models.server)
    summary = run_qa(
        bashgym_cli, sample_repo, tmp_path / "run",
        "--set", "pipeline.budget_usd=0.0000001",
        "--set", "designer.buffer_size=1", "--set", "designer.max_concurrent_row_groups=1",
    )  # fmt: skip
    counts = summary["counts"]
    asked = [r for r in scripted_models.server.completions if qa_model.is_question(r)]
    assert {r.model for r in asked} == {"gpt-4o-mini"}
    assert 1 <= len(asked) < 19 and counts["qa.skipped_budget"] == 19 - len(asked)
    assert summary["cost_usd"] > 0
