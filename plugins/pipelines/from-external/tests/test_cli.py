"""A real `bashgym run`: a CSV through the files source, from-external, and the nemo-jsonl sink."""

from __future__ import annotations

import json

import pandas as pd
from bashgym_designer.rubrics import get_rubric
from bashgym_pipelines_from_external.options import FromExternalOptions
from bashgym_testing.server import Reply

RUBRIC = get_rubric("instruction-response")


def judge_reply(request) -> Reply:
    text = request.last_user_text
    if "GARBLE" in text:
        return Reply("Sorry, no scores today.")
    score = 1 if "LOWSCORE" in text else 5
    body = {c: {"reasoning": "scripted", "score": score} for c in RUBRIC.names}
    return Reply("```json\n" + json.dumps(body) + "\n```")


def test_a_csv_becomes_judged_sft_lines(scripted_models, bashgym_cli, bashgym_env, tmp_path):
    server = scripted_models.server
    server.add_rule(lambda r: r.last_user_text.startswith(RUBRIC.instructions), judge_reply)
    csv = bashgym_env.workdir / "qa.csv"
    pd.DataFrame(
        {
            "Question": [
                "What is a Python generator?",
                "Explain HTTP caching.",
                "Name a sorting algorithm LOWSCORE",
                "What is 2+2? GARBLE",
            ],
            "Answer": ["A function that yields values lazily.", None, "bubble sort", "4"],
        }
    ).to_csv(csv, index=False)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-p", "from-external",
        "-k", "nemo-jsonl", "--set", "sink.val_fraction=0", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok" and summary["counts"]["kept"] == 2, summary["counts"]
    dropped = summary["counts"]["dropped"]
    assert [n for r, n in dropped.items() if "helpfulness below 3" in r] == [1], dropped
    assert [n for r, n in dropped.items() if "unparseable" in r] == [1], dropped  # never silent
    assert summary["counts"]["dropped_total"] == 2

    lines = [json.loads(x) for x in (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()]
    assert sorted(line["messages"][1]["content"] for line in lines) == [
        "Explain HTTP caching.",
        "What is a Python generator?",
    ]
    for line in lines:
        system, user, assistant = line["messages"]
        assert system == {"role": "system", "content": FromExternalOptions().system_prompt}
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert assistant["content"].strip()


def test_an_unmappable_source_is_a_clear_input_error(scripted_models, bashgym_cli, bashgym_env):
    csv = bashgym_env.workdir / "notes.csv"
    pd.DataFrame({"title": ["a"], "body": ["b"]}).to_csv(csv, index=False)
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-p", "from-external",
        "-k", "nemo-jsonl",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "no instruction column among the seed's columns ['title', 'body'" in message
    assert "--set pipeline.mapping.instruction=COLUMN" in message
    assert scripted_models.server.completions == []  # refused before any model call
