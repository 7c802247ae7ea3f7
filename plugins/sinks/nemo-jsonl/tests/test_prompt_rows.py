"""A chat export read by the prompts source mixes chats with prompt-only lines: a drop says
what is really missing, and which line of which file it was. Through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink

CHATS = "examples/prompts/chats.jsonl"
NO_RESPONSE = "a prompt with no response: nothing to train on"


def dropped(out: Path) -> list[tuple[str, str, str]]:
    lines = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    return [(x["by"], x["reason"], x["row"]["row_id"]) for x in lines]


def test_prompt_only_lines_say_no_response_and_each_drop_names_its_line(
    bashgym_cli, repo, monkeypatch
):
    """Before: the two prompt-only lines were dropped as `messages is not a list` (the column is
    there for line 3's chat, empty on theirs), and all three drops carried the file alone."""
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "chats"
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", f"source.path={CHATS}", "-k", "parquet",
        "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    last_user = "last message is not the assistant's"
    assert dropped(out) == [
        ("sink nemo-jsonl", NO_RESPONSE, f"{CHATS}:1"),
        ("sink nemo-jsonl", NO_RESPONSE, f"{CHATS}:2"),
        ("sink nemo-jsonl", last_user, f"{CHATS}:3"),
    ]
    run = json.loads((out / "run.json").read_text())
    assert run["dropped_rows"] == {
        f"sink nemo-jsonl: {NO_RESPONSE}": [f"{CHATS}:1", f"{CHATS}:2"],
        f"sink nemo-jsonl: {last_user}": [f"{CHATS}:3"],
    }
    assert "messages is not a list" not in result.output
    # the lines' own ids are left as the file gave them: they key the split and resume
    assert set(pd.read_parquet(out / "data.parquet")["id"]) == {"t1", "t2", "t3"}


def test_a_glob_of_jsonl_and_markdown_names_each_line_and_section(bashgym_cli, repo, bashgym_env):
    """Rows of two kinds of file: `source_line` is NaN on the markdown rows (a float column
    then), `source_index` on the JSONL rows; each drop still names its line or section."""
    folder = bashgym_env.workdir / "mixed"
    folder.mkdir()
    shutil.copy(repo / CHATS, folder / "chats.jsonl")
    (folder / "tasks.md").write_text("# Lint\n\nRun ruff.\n\n# Test\n\nRun pytest.\n")
    out = bashgym_env.workdir / "glob"
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", f"source.path={folder}/*", "--set",
        "source.split_headings=1", "-k", "parquet", "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ids = {row_id for _, reason, row_id in dropped(out) if reason == NO_RESPONSE}
    assert ids == {
        f"{folder}/chats.jsonl:1", f"{folder}/chats.jsonl:2",
        f"{folder}/tasks.md[0]", f"{folder}/tasks.md[1]",
    }  # fmt: skip


def test_a_prompt_with_its_response_among_chats_is_written(run_ctx):
    """Mixed rows: a chat, a prompt/response line with no messages (written as the Q&A it
    is, not dropped for its empty messages cell), a prompt alone, and a row with neither."""
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    frame = pd.DataFrame(
        [
            {"prompt": "Hi", "messages": json.dumps(chat), "response": None},
            {"prompt": "2+2?", "messages": None, "response": "4"},
            {"prompt": "Explain CI.", "messages": float("nan"), "response": "  "},
            {"prompt": None, "messages": "", "response": None},
        ]
    )
    written = NemoJsonlSink().write(frame, NemoJsonlOptions(val_fraction=0), run_ctx, "rows")
    lines = [json.loads(x) for x in (run_ctx.run_dir / "nemo-jsonl" / "train.jsonl").open()]
    assert written.rows == 2
    assert [m["messages"][-1]["content"] for m in lines] == ["Hello.", "4"]
    assert run_ctx.dropped == {
        f"sink nemo-jsonl: {NO_RESPONSE}": 1,
        "sink nemo-jsonl: no messages": 1,
    }
