"""Episodes without the whole engine: `finalize()` on question rows as DataDesigner leaves them,
the scripted server as the teacher, the warm sandbox in the best environment installed here;
resume through the run store; and the judge on finished rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from bashgym_pipelines_csv_triangulation.judge import NO_MESSAGES, TriangulationJudge
from bashgym_pipelines_csv_triangulation.options import (
    CsvTriangulationOptions,
    TriangulationJudgeOptions,
)
from bashgym_pipelines_csv_triangulation.pipeline import CsvTriangulationPipeline
from bashgym_pipelines_csv_triangulation.profile import profile, read_csv
from bashgym_pipelines_csv_triangulation.questions import template_seed_rows
from bashgym_testing.server import Fault, Reply

from bashgym.plugins import PluginHost


def options(shop, **over):
    sandbox = {"workers": 2, "preload": ["pandas", "numpy"], **over.pop("sandbox", {})}
    fields = {"questions": "templates", "verbalize": False, "kinds": ["aggregation"]}
    fields |= {"consistency_runs": 3, "sandbox": sandbox, **over}
    return CsvTriangulationOptions(csv=str(shop), **fields)


def question_rows(shop, n):
    """The rows DataDesigner returns for template questions with verbalize off."""
    rows = template_seed_rows(profile(shop, read_csv(shop)), ["aggregation"], n, seed=0)
    return pd.DataFrame([{**r, "question": r["template_question"]} for r in rows])


@pytest.fixture
def run(scripted_models):
    ctx = scripted_models.run_context(registry=PluginHost().registry)
    with ctx.models:
        yield ctx


def test_finalize_triangulates_and_a_second_call_resumes_from_the_store(
    run, scripted_teacher, scripted_models, shop
):
    rows = question_rows(shop, 2)
    first, second = rows["question"]
    scripted_teacher(
        dict(zip(rows["question"], rows["code"], strict=True)),
        {first: ["correct", "correct", "wrong"], second: ["wrong", "wrong", "wrong"]},
    )
    pipeline, opts = CsvTriangulationPipeline(), options(shop)
    out = pipeline.finalize(rows, opts, run).dataset
    assert list(out["question"]) == [first, second]
    assert list(out["verified"]) == [True, False]
    assert list(out["agreement"]) == ["2/3", "3/3"]
    requests = len(scripted_models.server.completions)
    assert requests == (2 + 2 + 1) + 3  # correct: look, submit; wrong: submit at once
    assert run.counts["csv-triangulation.verified"] == 1
    assert run.usage.output_tokens > 0

    again = CsvTriangulationPipeline().finalize(rows, opts, run).dataset  # resumed: done
    assert len(scripted_models.server.completions) == requests  # no model call repeated
    pd.testing.assert_frame_equal(again, out)
    episodes = (run.run_dir / "csv-triangulation" / "episodes.jsonl").read_text().splitlines()
    assert [json.loads(e)["verified"] for e in episodes] == [True, False]


def test_a_top_up_round_asks_new_questions_and_drops_repeated_ones(run, scripted_models, shop):
    pipeline, opts = CsvTriangulationPipeline(), options(shop, consistency_runs=1)
    scripted_models.server.add_rule(
        lambda r: "data analyst" in r.system_text, Reply("```python\nsubmit(0)\n```")
    )
    first_seed = pipeline.build(opts, run, None).get_seed_config()
    rows = question_rows(shop, 2)
    pipeline.finalize(rows, opts, run)
    repeated = pipeline.finalize(rows, opts, run)  # the same questions in a second round
    assert repeated.dataset.empty
    assert run.dropped["csv-triangulation: asked in an earlier round"] == 2
    # handed back whole, as DataDesigner left them (dropped.jsonl)
    assert [(d.by, d.reason) for d in repeated.dropped] == [
        ("pipeline csv-triangulation", "asked in an earlier round")
    ] * 2
    assert [d.row["question"] for d in repeated.dropped] == list(rows["question"])
    later = pipeline.build(opts, run, None).get_seed_config().source.df
    earlier = first_seed.source.df
    assert list(later["template_question"][:3]) == list(earlier["template_question"][2:5])


def test_a_failed_gold_run_skips_the_consistency_runs(run, scripted_models, shop):
    rows = question_rows(shop, 1)
    rows.loc[0, "code"] = "print(df.units.sum())"  # prints the answer, submits nothing
    out = CsvTriangulationPipeline().finalize(rows, options(shop), run).dataset
    (row,) = out.to_dict(orient="records")
    assert not row["verified"] and not row["gold_submitted"]
    assert row["verdict"] == (
        "gold run submitted no answer: protocol violation: the code ran without calling submit()"
    )
    assert json.loads(row["consistency_traces"]) == []
    assert scripted_models.server.completions == []  # no model call spent on it


def test_a_failing_model_call_fails_the_episode_with_its_reason(run, scripted_models, shop):
    scripted_models.server.add_rule(
        lambda r: "data analyst" in r.system_text, Fault.status(400, body={"error": "bad"})
    )
    rows = question_rows(shop, 1)
    out = CsvTriangulationPipeline().finalize(rows, options(shop, consistency_runs=2), run).dataset
    traces = json.loads(out.loc[0, "consistency_traces"])
    assert [t["error"].startswith("model call failed:") for t in traces] == [True, True]
    assert out.loc[0, "verdict"] == "no consistency run submitted an answer (0 of 2)"


def test_a_reply_of_bare_code_runs_and_is_recorded_fenced(run, scripted_models, shop):
    scripted_models.server.add_rule(
        lambda r: "data analyst" in r.system_text, Reply("submit(round(df['revenue'].sum(), 2))")
    )
    rows = question_rows(shop, 1)
    rows.loc[0, "code"] = "submit(round(df['revenue'].sum(), 2))"
    out = CsvTriangulationPipeline().finalize(rows, options(shop, consistency_runs=1), run).dataset
    (trace,) = json.loads(out.loc[0, "consistency_traces"])
    assert trace["submitted"] and trace["answer"] == 1507.81 and trace["unfenced"] == 1
    assert trace["messages"][-1]["content"] == (
        "```python\nsubmit(round(df['revenue'].sum(), 2))\n```"
    )
    assert bool(out.loc[0, "verified"])


def test_running_out_of_turns_fails_the_episode(run, scripted_models, shop):
    scripted_models.server.add_rule(
        lambda r: "data analyst" in r.system_text, Reply("```python\nprint(1)\n```")
    )
    rows = question_rows(shop, 1)
    out = (
        CsvTriangulationPipeline()
        .finalize(rows, options(shop, consistency_runs=1, max_turns=2), run)
        .dataset
    )
    (trace,) = json.loads(out.loc[0, "consistency_traces"])
    assert trace["error"] == "no submit() within 2 turns" and trace["turns"] == 2
    assert [m["role"] for m in trace["messages"]] == [
        "system", "user", "assistant", "user", "assistant", "user"
    ]  # fmt: skip


def judged(rows, **opts):
    frame = pd.DataFrame(rows)
    return list(TriangulationJudge().verdicts(frame, TriangulationJudgeOptions(**opts), None))


def row(gold, answers, *, match=None, messages=True, answer_type="number"):
    return {
        "gold_submitted": gold is not None,
        "gold_answer": json.dumps(gold),
        "consistency_answers": json.dumps(
            [{"submitted": a is not None, "answer": a} for a in answers]
        ),
        "answer_type": answer_type,
        "match": json.dumps(match or {}),
        "messages": [{"role": "user", "content": "q"}] if messages else None,
    }


def test_the_judge_keeps_verified_rows_and_says_why_it_drops_the_others():
    rows = [
        row(4.0, [4.0, 4.03, 3.0]),  # 4.03 is within 1% of 4.0
        row(4.0, [3.0, 3.0, 4.0]),
        row(4.0, [4.0, None, None]),
        row(None, []),
        row(0.01, [0.012, 0.011, 0.5], answer_type="p_value"),
        row(0.01, [0.02, 0.02, 0.02], answer_type="p_value"),
    ]
    assert judged(rows) == [
        None,
        "gold answer disagrees with the majority",
        "no majority among the consistency runs",
        "gold run submitted no answer",
        None,
        "gold answer disagrees with the majority",
    ]


def test_numbers_agree_relative_to_their_scale_and_only_with_the_same_sign():
    """Measured on the embedded model: a gold correlation of 0.047 was "confirmed" by five runs
    answering -0.047 under an absolute tolerance of 0.1."""
    assert judged([row(0.047, [-0.047] * 5)]) == ["gold answer disagrees with the majority"]
    assert judged([row(0.047, [0.0471, 0.047, 0.0468])]) == [None]  # within 1%, or rounding
    assert judged([row(0.047, [0.012] * 3)]) == ["gold answer disagrees with the majority"]
    assert judged([row(1200.0, [1210.0] * 3)]) == [None]  # 0.8%: the same total
    assert judged([row(1200.0, [1260.0] * 3)]) == ["gold answer disagrees with the majority"]


def test_the_judge_uses_the_rows_tolerances_unless_given_its_own():
    loose = row(4.0, [4.4, 4.4, 4.4], match={"float_tolerance": 0.5})
    assert judged([loose]) == [None]  # the pipeline verified it at 0.5
    assert judged([loose], float_tolerance=0.1) == ["gold answer disagrees with the majority"]
    unverified = row(4.0, [4.4, 4.4, 4.4], messages=False)  # made at the defaults
    assert judged([unverified], float_tolerance=0.5) == [NO_MESSAGES]
    assert judged([unverified], float_tolerance=0.5, require_messages=False) == [None]


def test_the_judge_names_missing_columns():
    from bashgym.contracts import InputError

    with pytest.raises(InputError, match="needs the csv-triangulation pipeline's columns"):
        judged([{"prompt": "x", "response": "y"}])
