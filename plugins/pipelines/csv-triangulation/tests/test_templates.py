"""Profiling and template questions: every template's code runs in the sandbox, submits, and
gets the answer pandas gets on the host."""

from __future__ import annotations

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


def test_every_template_runs_in_the_sandbox_as_on_the_host(
    registry, shop, shop_profile, sandbox, environment
):
    usable = [
        name for name in ("bubblewrap", "local")
        if name in registry.items["environments"]
        and registry.get("environments", name).obj.available() is None
    ]  # fmt: skip
    if environment != usable[0]:
        pytest.skip(f"checked once, in {usable[0]}")
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

    results = sandbox(body, preload=["pandas", "numpy", "scipy.stats"], cpu_s=10, wall_s=30)
    for q, result in zip(questions, results, strict=True):
        assert result.submitted, (q.question, result.error)
        assert values_match(result.answer, on_host(q.code), MatchOptions(float_tolerance=0)), q
