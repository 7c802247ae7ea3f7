"""Profiling and template questions: every template's code runs in the sandbox, submits, and
gets the answer pandas gets on the host."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from bashgym_pipelines_csv_triangulation.answers import normalize
from bashgym_pipelines_csv_triangulation.matching import MatchOptions, values_match
from bashgym_pipelines_csv_triangulation.options import KINDS
from bashgym_pipelines_csv_triangulation.profile import profile, read_csv
from bashgym_pipelines_csv_triangulation.questions import llm_seed_rows
from bashgym_pipelines_csv_triangulation.templates import GENERATORS, template_questions

from bashgym.contracts import InputError


@pytest.fixture
def shop_profile(shop):
    return profile(shop, read_csv(shop))


def test_the_profile_knows_what_each_column_is(shop_profile):
    kinds = {c.name: c.kind for c in shop_profile.columns}
    assert kinds == {
        "order_id": "id",
        "region": "categorical",
        "product": "categorical",
        "units": "numeric",
        "price": "numeric",
        "revenue": "numeric",
    }
    text = shop_profile.text()
    assert text.startswith("File shop.csv: 24 rows, 6 columns.")
    assert "- region (" in text and "'North' (6)" in text and "np.float64" not in text
    assert len(shop_profile.sha256) == 64


def test_a_file_that_is_not_a_table_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no CSV file"):
        read_csv(tmp_path / "missing.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n")
    with pytest.raises(InputError, match="no rows or no columns"):
        read_csv(empty)


def test_templates_interleave_kinds_and_follow_the_seed(shop_profile):
    questions = template_questions(shop_profile, list(KINDS), seed=3, limit=8)
    assert [q.kind for q in questions] == list(KINDS) * 2
    again = template_questions(shop_profile, list(KINDS), seed=3, limit=8)
    assert [q.question for q in again] == [q.question for q in questions]
    other = template_questions(shop_profile, list(KINDS), seed=4, limit=8)
    assert [q.question for q in other] != [q.question for q in questions]
    assert len({q.question for q in template_questions(shop_profile, ["group-by"], seed=0,
                                                        limit=500)}) > 5  # fmt: skip


def test_llm_seed_rows_spread_over_kinds_and_columns(shop_profile):
    rows = llm_seed_rows(shop_profile, ["aggregation", "statistics"], 6, seed=1)
    assert sorted({r["kind"] for r in rows}) == ["aggregation", "statistics"]
    assert len({r["focus"] for r in rows}) == 5  # every column but the id
    assert all(r["profile"] == shop_profile.text() for r in rows)


def test_every_template_runs_in_the_sandbox_as_on_the_host(shop, shop_profile, best_sandbox):
    questions = [q for kind in KINDS for q in GENERATORS[kind](shop_profile)]
    assert {q.kind for q in questions} == set(KINDS)
    frame = pd.read_csv(shop)

    def on_host(code: str):
        got = []
        exec(code, {"df": frame.copy(), "submit": got.append})
        return normalize(got[0])

    async def body(pool):  # one episode: each cell reports its own submission
        async with pool.episode() as episode:
            return [await episode.run(q.code) for q in questions]

    results = best_sandbox(body, preload=["pandas", "numpy", "scipy.stats"], cpu_s=10, wall_s=30)
    for q, result in zip(questions, results, strict=True):
        assert result.submitted, (q.question, result.error)
        assert values_match(result.answer, on_host(q.code), MatchOptions(float_tolerance=0)), q


def test_unusable_and_repeated_questions_are_dropped_with_their_reason(shop, tmp_path, bashgym_env):
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.questions import read_questions

    from bashgym.contracts import RunContext
    from bashgym.settings import Settings

    good = {"question": "How many rows?", "answer_format": "an integer", "hint": "len(df)",
            "answer_type": "number"}  # fmt: skip
    rows = pd.DataFrame(
        {
            "kind": ["aggregation"] * 5,
            "proposal": [
                good,
                json.dumps(good),  # the same question, as JSON text
                {**good, "question": "  "},
                {**good, "question": "Other?", "hint": ""},
                "not json",
            ],
        }
    )
    run = RunContext(run_dir=tmp_path, settings=Settings())
    found = read_questions(rows, CsvTriangulationOptions(csv=str(shop)), run, "sha")
    assert [q["question"] for q in found.values()] == ["How many rows?"]
    assert dict(run.dropped) == {
        "csv-triangulation: duplicate question": 1,
        "csv-triangulation: no question": 2,
        "csv-triangulation: no hint for the gold run": 1,
    }


def test_reworded_questions_lose_labels_and_quotes_and_fall_back_to_the_template(shop, tmp_path):
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.questions import read_questions

    from bashgym.contracts import RunContext
    from bashgym.settings import Settings

    base = {"answer_format": "an integer", "hint": "h", "code": "submit(1)", "kind": "filtering"}
    rows = pd.DataFrame(
        [
            {**base, "template_question": "T1?", "question": 'Reworded question: "How many?"'},
            {**base, "template_question": "T2?", "question": ""},
        ]
    )
    run = RunContext(run_dir=tmp_path, settings=Settings())
    options = CsvTriangulationOptions(csv=str(shop), questions="templates")
    found = read_questions(rows, options, run, "sha")
    assert [q["question"] for q in found.values()] == ["How many?", "T2?"]
    assert run.counts["csv-triangulation.reworded_empty"] == 1


def test_a_degenerate_statistic_is_not_a_question(tmp_path):
    """A t-test on a constant group gave p = 0, and five runs agreed: a question with nothing
    to measure. The gold code now stops, so no run is spent and the row says why."""
    from bashgym_pipelines_csv_triangulation.templates import DEGENERATE

    path = tmp_path / "flat.csv"
    data = [("N", 5, 1), ("N", 5, 2), ("N", 5, 3), ("S", 4, 4), ("S", 6, 5), ("S", 9, 6)] * 3
    rows = ["region,price,qty"] + [f"{r},{p},{q}" for r, p, q in data]
    path.write_text("\n".join(rows) + "\n")
    frame = read_csv(path)
    questions = [q for kind in KINDS for q in GENERATORS[kind](profile(path, frame))]
    ttests = [q for q in questions if q.answer_type == "p_value" and "price" in q.question]
    assert ttests
    for q in ttests:  # price is constant where region is N
        with pytest.raises(ValueError, match=DEGENERATE):
            exec(q.code, {"df": frame.copy(), "submit": lambda v: None})
    # the same template on a column that varies in both groups is a question
    (qty_test,) = [q for q in questions if q.answer_type == "p_value" and "qty" in q.question]
    got = []
    exec(qty_test.code, {"df": frame.copy(), "submit": got.append})
    assert 0 <= got[0] <= 1


@pytest.mark.parametrize(
    ("template", "reworded", "why"),
    [
        ("What is the total value of revenue?", "What is the total revenue for each customer?",
         "asks +grouping"),
        ("What is the total value of revenue?", "What is the average revenue?",
         "asks +average, -total"),
        ("How many rows have qty greater than 3?", "How many rows have qty above 4?",
         "leaves out 3"),
        ("How many rows have region equal to 'N'?", "How many rows are in the north region?",
         "leaves out 'N'"),
        ("What is the median value of unit_price?", "What is the median price?",
         "leaves out column unit_price"),
    ],
)  # fmt: skip
def test_a_rewording_that_changes_the_meaning_is_caught(template, reworded, why):
    from bashgym_pipelines_csv_triangulation.questions import meaning_changed

    assert meaning_changed(template, reworded, ["revenue", "qty", "region", "unit_price"]) == why


@pytest.mark.parametrize(
    ("template", "reworded"),
    [
        ("What is the total value of revenue?", "What is the sum of all revenue?"),
        ("What is the largest value of qty?", "What is the maximum qty?"),
        ("What is the average qty for each region?", "What is the mean qty per region?"),
        ("What is the median value of unit_price?", "What is the median unit price?"),
        ("How many rows have region equal to 'N'?", "How many rows have 'N' as their region?"),
    ],
)  # fmt: skip
def test_a_rewording_that_keeps_the_meaning_is_kept(template, reworded):
    from bashgym_pipelines_csv_triangulation.questions import meaning_changed

    assert meaning_changed(template, reworded, ["revenue", "qty", "region", "unit_price"]) is None


def test_a_changed_rewording_is_asked_in_the_templates_words(shop, tmp_path):
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.questions import read_questions

    from bashgym.contracts import RunContext
    from bashgym.settings import Settings

    base = {"answer_format": "a number", "hint": "h", "code": "submit(1)", "kind": "aggregation"}
    template = "What is the total value of revenue?"
    rows = pd.DataFrame(
        [{**base, "template_question": template,
          "question": "What is the total revenue for each customer?"}]
    )  # fmt: skip
    run = RunContext(run_dir=tmp_path, settings=Settings())
    options = CsvTriangulationOptions(csv=str(shop), questions="templates")
    found = read_questions(rows, options, run, "sha", ["revenue", "customer"])
    assert [q["question"] for q in found.values()] == [template]
    assert run.counts["csv-triangulation.reworded_meaning_changed"] == 1
