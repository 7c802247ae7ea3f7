"""End to end: a real `bashgym run` of csv-triangulation on the shipped CSV, every model turn
answered by the scripted server, the code run in the warm sandbox, the triangulation judge and
the nemo-jsonl sink. The scripted teacher (conftest) follows a plan per question, so which
questions are verified, and why the others are dropped, is known in advance."""

from __future__ import annotations

import json
import threading

import pytest
from bashgym_pipelines_csv_triangulation.profile import profile, read_csv
from bashgym_pipelines_csv_triangulation.prompts import FORMAT
from bashgym_pipelines_csv_triangulation.templates import template_questions
from bashgym_testing.server import Reply


def run_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow  # a whole run: DataDesigner, litellm and a sandbox pool start (~25 s here)
def test_template_questions_are_verified_or_dropped_with_their_reason(
    scripted_teacher, bashgym_cli, shop, tmp_path
):
    kinds = ["group-by", "aggregation"]
    questions = template_questions(profile(shop, read_csv(shop)), kinds, seed=0, limit=4)
    texts = [q.question for q in questions]
    plans = {
        texts[0]: ["correct", "series", "correct"],  # verified, in two answer shapes
        texts[1]: ["wrong", "wrong", "correct"],  # the majority disagrees with the gold
        texts[2]: ["correct", "prose", "print"],  # 1 of 3 submitted: no majority
        texts[3]: ["late", "correct", "wrong"],  # verified, 2 of 3: told the format, it submits
    }
    scripted_teacher({q.question: q.code for q in questions}, plans)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-p", "csv-triangulation", "-n", "4", "-j", "triangulation", "-k", "nemo-jsonl",
        "--set", f"pipeline.csv={shop}", "--set", "pipeline.questions=templates",
        "--set", "pipeline.verbalize=false", "--set", f"pipeline.kinds={json.dumps(kinds)}",
        "--set", "pipeline.consistency_runs=3", "--set", "pipeline.sandbox.workers=2",
        "--set", "sink.val_fraction=0",
        "--set", 'sink.keep_fields=["question_id", "question", "hint", "verified", "agreement"]',
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    assert counts["kept"] == 2 and counts["csv-triangulation.verified"] == 2, counts
    assert counts["dropped"] == {
        "judge triangulation: gold answer disagrees with the majority": 1,
        "judge triangulation: no majority among the consistency runs": 1,
    }
    assert summary["usage_by_alias"]["default"]["output_tokens"] > 0

    episodes = {e["question"]: e for e in run_lines(out / "csv-triangulation" / "episodes.jsonl")}
    assert set(episodes) == set(texts)
    assert [episodes[t]["verified"] for t in texts] == [True, False, False, True]
    assert episodes[texts[1]]["verdict"] == (
        "gold answer disagrees with the majority (2/3 agree on another answer)"
    )
    assert episodes[texts[2]]["verdict"] == ("1 of 3 consistency runs agree (more than 50% needed)")
    # which of the three runs got the scripted prose answers depends on the order they ran in
    # (a loaded machine reorders them): two broke the protocol, one answered
    runs = episodes[texts[2]]["consistency_traces"]
    assert sorted((t["error"] for t in runs), key=lambda e: e or "") == [
        None,
        "protocol violation: a reply without code and no submit()",
        "protocol violation: a reply without code and no submit()",
    ]
    late = episodes[texts[3]]["consistency_traces"][0]
    assert late["submitted"] and late["no_code"] == 1 and late["error"] is None, late
    assert late["messages"][3] == {"role": "user", "content": FORMAT}
    prose = next(t for t in runs if t["error"])  # told the format each turn, in vain
    assert prose["no_code"] == prose["turns"] == 6 and not prose["submitted"], prose
    for text in texts:
        episode = episodes[text]
        gold = episode["gold_trace"]
        assert gold["teacher"] == "template" and gold["submitted"] and gold["hint"]
        assert gold["messages"][2]["content"] == f"```python\n{episode['code']}\n```"
        assert len(episode["consistency_traces"]) == 3
        for trace in episode["consistency_traces"]:
            assert (trace["duration_s"] > 0 and trace["cells"]) or trace["error"]
            assert all(c["wall_s"] >= 0 for c in trace["cells"])
        assert (episode["messages"] is not None) is episode["verified"]

    lines = run_lines(out / "nemo-jsonl" / "train.jsonl")
    assert sorted(line["question"] for line in lines) == sorted([texts[0], texts[3]])
    for line in lines:
        roles = [m["role"] for m in line["messages"]]
        assert roles == ["system", "user", "assistant", "user", "assistant"]
        assert "Hint:" not in line["messages"][1]["content"]  # trained without the hint
        assert "submit(" in line["messages"][-1]["content"]
        assert line["verified"] is True and line["hint"]

    dropped = run_lines(out / "dropped.jsonl")
    assert sorted(d["row"]["question"] for d in dropped) == sorted([texts[1], texts[2]])


PROPOSALS = [
    {
        "question": "How many units were sold in the North region?",
        "answer_format": "an integer",
        "hint": "Filter rows where region == 'North' and sum the units column.",
        "answer_type": "number",
    },
    {
        "question": "Which product has the highest total revenue?",
        "answer_format": "the product name",
        "hint": "Group by product, sum revenue and take idxmax().",
        "answer_type": "text",
    },
]
GOLD_CODE = {
    PROPOSALS[0]["question"]: "submit(int(df.loc[df.region == 'North', 'units'].sum()))",
    PROPOSALS[1]["question"]: "submit(df.groupby('product').revenue.sum().idxmax())",
}


@pytest.mark.slow
def test_llm_proposed_questions_run_a_gold_episode_with_the_hint(
    scripted_models, scripted_teacher, bashgym_cli, shop, tmp_path
):
    proposals = iter(PROPOSALS * 3)
    lock = threading.Lock()

    def propose(request) -> Reply:
        with lock:
            body = next(proposals)
        return Reply("```json\n" + json.dumps(body) + "\n```")

    plans = {PROPOSALS[0]["question"]: ["correct"], PROPOSALS[1]["question"]: ["wrong"]}
    scripted_teacher(GOLD_CODE, plans)
    scripted_models.server.add_rule("write one question that a data analyst", propose)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-p", "csv-triangulation", "-n", "2", "-j", "triangulation", "-k", "nemo-jsonl",
        "--set", f"pipeline.csv={shop}", "--set", "pipeline.consistency_runs=2",
        "--set", "sink.val_fraction=0", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["kept"] == 1, counts
    assert counts["dropped"] == {"judge triangulation: gold answer disagrees with the majority": 1}

    episodes = {e["question"]: e for e in run_lines(out / "csv-triangulation" / "episodes.jsonl")}
    north = episodes[PROPOSALS[0]["question"]]
    assert north["source"] == "llm" and north["verified"] and north["gold_answer"] == 67
    gold = north["gold_trace"]
    assert gold["teacher"] == "default" and gold["hint"]
    assert f"\nHint: {PROPOSALS[0]['hint']}\n" in gold["messages"][1]["content"]
    assert [c["submitted"] for c in gold["cells"]] == [False, True]  # looked, then submitted
    best = episodes[PROPOSALS[1]["question"]]
    assert not best["verified"] and best["gold_answer"] == "widget"
    assert best["majority_answer"] == -1
    (line,) = run_lines(out / "nemo-jsonl" / "train.jsonl")
    assert line["messages"][1]["content"] == (
        f"Question: {PROPOSALS[0]['question']}\nAnswer format: an integer\n"
        "Reply with one ```python code block."
    )
