"""What the sink says it did is true: number answers are answers, every drop says who made it
and which row it was, and "kept" is the lines a trainer reads (subagent lines included, and
counted as such). Through the real CLI and engine where a user would see it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.shapes import Invalid
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink

from bashgym.records import trace_to_row

MATH = "question,answer\nWhat is 2+2?,4\nWhat is 3*3?,9\nWhat is 10/4?,2.5\n"


def answers(folder: Path) -> list[str]:
    lines = []
    for name in ("train.jsonl", "val.jsonl"):
        if (folder / name).exists():
            lines += [json.loads(x) for x in (folder / name).read_text().splitlines()]
    return sorted(line["messages"][-1]["content"] for line in lines)


def events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    items = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in items if e["type"] == kind]


def test_a_numeric_answer_column_is_written_as_its_text(bashgym_cli, bashgym_env):
    """pandas reads `4, 9, 2.5` as floats: the answers are `4`, `9`, `2.5`, not three drops
    for "empty response" (the old cause, and a false one)."""
    csv = bashgym_env.workdir / "math.csv"
    csv.write_text(MATH)
    out = bashgym_env.workdir / "n1"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "--map", "prompt=question",
        "--map", "response=answer", "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert answers(out / "nemo-jsonl") == ["2.5", "4", "9"]
    run = json.loads((out / "run.json").read_text())
    assert run["counts"]["kept"] == 3 and run["counts"]["dropped_total"] == 0


def test_numbers_become_text_and_other_values_say_why_not(run_ctx, tmp_path):
    """An int column with a missing cell is a float column in pandas: `7.0` is written `7`,
    the missing cell is empty, an object is "not text" (not "empty")."""
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"prompt": "seven?", "response": 7},
                {"prompt": "none?", "response": None},
                {"prompt": 12, "response": "twelve"},
                {"prompt": "obj?", "response": {"a": 1}},
                {"prompt": "list?", "response": [1, 2]},
                {"prompt": "yes?", "response": True},
            ]
        )
        + "\n"
    )
    frame = pd.read_json(path, lines=True)
    written = NemoJsonlSink().write(frame, NemoJsonlOptions(val_fraction=0), run_ctx, "rows")
    folder = run_ctx.run_dir / "nemo-jsonl"
    assert answers(folder) == ["7", "true", "twelve"] and written.rows == 3
    prompts = [json.loads(x)["messages"][0]["content"] for x in (folder / "train.jsonl").open()]
    assert "12" in prompts
    assert run_ctx.dropped == {
        "sink nemo-jsonl: rows: empty response": 1,
        "sink nemo-jsonl: rows: response is not text": 2,
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [(4, "4"), (4.0, "4"), (2.5, "2.5"), (0.1, "0.1"), (-3, "-3"), (False, "false"),
     (2.0**60, "1.152921504606847e+18"), ("  x ", "  x ")],
)  # fmt: skip
def test_cell_text_of_numbers(value, text):
    import numpy as np
    from bashgym_sinks_nemo_jsonl.shapes import cell_text

    assert cell_text(value, "response") == text
    if not isinstance(value, str):
        assert cell_text(np.array([value])[0], "response") == text  # numpy scalars too


@pytest.mark.parametrize(("value", "reason"), [(None, "empty"), (float("nan"), "empty"),
                                               ("  ", "empty"), ({"a": 1}, "response is not text"),
                                               ([1], "response is not text")])  # fmt: skip
def test_cell_text_refusals(value, reason):
    from bashgym_sinks_nemo_jsonl.shapes import cell_text

    with pytest.raises(Invalid, match=reason):
        cell_text(value, "response")


def test_a_sink_drop_says_who_made_it_and_which_row(bashgym_cli, bashgym_env):
    """events.jsonl names the sink (the report's funnel reads it), and run.json's dropped rows
    name the row in the file, not only the file."""
    csv = bashgym_env.workdir / "qa.csv"
    csv.write_text("prompt,response\nWhat is 2+2?,4\nSay nothing,\nWhat is 3*3?,9\n")
    out = bashgym_env.workdir / "f1"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-k", "nemo-jsonl",
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (drop,) = events(out, "row_dropped")
    assert drop["by"] == "sink nemo-jsonl" and drop["reason"] == "rows: empty response"
    assert drop["row_id"] == f"{csv} (source_row 1)"  # the 0-based data row "Say nothing"
    run = json.loads((out / "run.json").read_text())
    key = "sink nemo-jsonl: rows: empty response"
    assert run["counts"]["dropped"] == {key: 1}
    assert run["dropped_rows"] == {key: [f"{csv} (source_row 1)"]}
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    assert manifest["dropped"] == {key: 1}  # the same words as run.json


def test_with_subagents_kept_is_the_lines_written(bashgym_cli, repo, monkeypatch):
    """The example transcripts hold one subagent: its line is written, so it is kept, and the
    manifest and run.json say how many lines are subagents' (the sessions are one fewer)."""
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "cc4"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.path=examples/transcripts",
        "-k", "nemo-jsonl", "--set", "sink.include_subagents=true", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = out / "nemo-jsonl"
    written = sum(len((folder / f).read_text().splitlines()) for f in ("train.jsonl", "val.jsonl"))
    run = json.loads((out / "run.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert run["counts"]["kept_by_sink"] == {"nemo-jsonl": written}
    assert run["counts"]["kept"] == written == sum(manifest["counts"].values())
    assert manifest["lines_from_subagents"] == 1 == run["counts"]["nemo-jsonl.subagent_lines"]
    assert manifest["records"] == written - 1


def test_subagent_lines_are_counted_in_what_the_sink_wrote(run_ctx, make_trace):
    parent = make_trace(1)
    parent.subagents = [make_trace(2, system_prompt="You are a subagent.")]
    frame = pd.DataFrame([trace_to_row(parent), trace_to_row(make_trace(3))])
    written = NemoJsonlSink().write(frame, NemoJsonlOptions(include_subagents=True), run_ctx, "")
    manifest = json.loads((run_ctx.run_dir / "nemo-jsonl" / "manifest.json").read_text())
    assert written.rows == 3 == sum(manifest["counts"].values())
    assert manifest["lines_from_subagents"] == 1 and manifest["records"] == 2
