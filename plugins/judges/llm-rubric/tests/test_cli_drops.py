"""Where a row the judge drops is told, through the real `bashgym run` (scripted model server).

The judge drops inside DataDesigner, through its own `bashgym-filter` processor
(`<column>-thresholds`): run.json counts the drop as `filter quality-thresholds: <rubric>:
<criterion> below <n>`, `dropped_rows` names the row by its file and row there, and
dropped.jsonl holds the row whole.
"""

from __future__ import annotations

import json

import pandas as pd
from bashgym_testing.server import Reply


def is_judge_prompt(request) -> bool:
    return "<response_schema>" in request.last_user_text


def score(request) -> Reply:
    """Correctness 2 (below the rubric's 3) for the answer marked WRONG, else 4."""
    correctness = 2 if "WRONG" in request.last_user_text else 4
    body = {
        "helpfulness": {"reasoning": "scripted", "score": 5},
        "correctness": {"reasoning": "scripted", "score": correctness},
    }
    return Reply(json.dumps(body))


def test_a_dropped_row_is_counted_by_its_filter_and_kept_whole_in_dropped_jsonl(
    scripted_models, bashgym_cli, bashgym_env, tmp_path
):
    scripted_models.server.add_rule(is_judge_prompt, score)
    pd.DataFrame(
        {
            "prompt": ["What is 2+2?", "Capital of France?", "Largest planet?", "Name a prime"],
            "response": ["4", "Lyon (WRONG)", "Jupiter", "7"],
        }
    ).to_csv(bashgym_env.workdir / "qa.csv", index=False)
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", "source.path=qa.csv", "-j", "llm-rubric",
        "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    reason = "instruction-response: correctness below 3"
    assert summary["counts"]["kept"] == 3
    assert summary["counts"]["dropped"] == {f"filter quality-thresholds: {reason}": 1}
    # which row, as the sinks name theirs (run.json's `dropped_rows` was {} for these)
    assert summary["dropped_rows"] == {
        f"filter quality-thresholds: {reason}": ["qa.csv (source_row 1)"]
    }
    (dropped,) = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert (dropped["by"], dropped["reason"]) == ("filter quality-thresholds", reason)
    row = dropped["row"]
    assert (row["response"], row["source_file"], row["source_row"]) == ("Lyon (WRONG)", "qa.csv", 1)
    assert row["quality"]["correctness"]["score"] == 2
    assert sorted(pd.read_parquet(out / "data.parquet")["response"]) == ["4", "7", "Jupiter"]
