"""A real `bashgym run`: the question rows finalize drops are in dropped.jsonl, whole, with
their reason, as run.json counts them. No sandbox: every question is dropped before any
episode runs."""

from __future__ import annotations

import json

from bashgym_testing.server import Reply


def proposal(request) -> Reply:
    """Every proposed question comes without a hint: the gold run could not be steered."""
    body = {"question": "What is the total revenue?", "answer_format": "a number", "hint": ""}
    return Reply(json.dumps({**body, "answer_type": "number"}))


def test_questions_without_a_hint_are_in_dropped_jsonl(
    scripted_models, bashgym_cli, shop, tmp_path
):
    """Before: run.json counted 2 questions dropped, dropped.jsonl had none of them."""
    scripted_models.server.add_rule(lambda r: r.last_user_text != "Hello!", proposal)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-p", "csv-triangulation", "--set", f"pipeline.csv={shop}",
        "--set", "pipeline.questions=llm", "-n", "2", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 3, result.output  # no row kept: every question was dropped
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["dropped"] == {"csv-triangulation: no hint for the gold run": 2}
    rows = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert [(r["by"], r["reason"]) for r in rows] == [
        ("pipeline csv-triangulation", "no hint for the gold run")
    ] * 2
    assert rows[0]["row"]["proposal"]["question"] == "What is the total revenue?"
    assert all(r["row"]["kind"] and r["row"]["focus"] for r in rows)  # the seed row's columns
    assert all(r["row"]["csv_name"] == "shop.csv" for r in rows)
