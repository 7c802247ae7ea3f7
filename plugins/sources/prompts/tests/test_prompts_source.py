"""The prompts source on every input shape, numeric ordering, heading splits, provenance, bad
records and bad input, plus the CLI end to end on the shipped examples."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from bashgym_sources_prompts.reader import PromptsInputError, split_sections
from bashgym_sources_prompts.source import PromptsOptions, PromptsSource
from bashgym_testing.paths import options_with_path_gone
from pydantic import ValidationError

from bashgym.contracts import RunContext
from bashgym.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "prompts"


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def read(run: RunContext, path: Path | str, **options) -> pd.DataFrame:
    return PromptsSource().open(PromptsOptions(path=str(path), **options), run)


def test_txt_one_prompt_per_line_without_comments(run):
    frame = read(run, EXAMPLES / "tasks.txt")
    assert list(frame.columns) == ["prompt", "source_file", "source_line"]
    assert len(frame) == 4
    assert frame["prompt"][0].startswith("Add a --dry-run flag")
    assert list(frame["source_line"]) == [2, 3, 6, 7]  # 1-based lines of the file
    assert not frame["prompt"].str.startswith("#").any()


def test_jsonl_prompt_field_messages_and_other_fields(run):
    frame = read(run, EXAMPLES / "chats.jsonl")
    assert list(frame.columns) == [
        "prompt", "messages", "id", "difficulty", "source_file", "source_line",
    ]  # fmt: skip
    assert list(frame["id"]) == ["t1", "t2", "t3"]
    assert frame["prompt"][2].startswith("The Docker build.")  # last user turn, not the first
    messages = json.loads(frame["messages"][2])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert pd.isna(frame["messages"][0])


def test_json_list_of_strings_objects_and_custom_field(run, tmp_path):
    strings = tmp_path / "p.json"
    strings.write_text(json.dumps(["first prompt", "  ", "second prompt"]))
    frame = read(run, strings)
    assert list(frame["prompt"]) == ["first prompt", "second prompt"]
    assert list(frame["source_index"]) == [0, 2]
    assert run.counts["source.skipped_records"] == 1
    assert run.notes == (f"{strings}[1]: empty prompt",)
    objects = tmp_path / "q.json"
    objects.write_text(json.dumps([
        {"question": "What is 2+2?", "answer": "4", "meta": {"level": 1}},
        {"question": 42},
        {"answer": "no question"},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts work"}]}]},
    ]))  # fmt: skip
    frame = read(run, objects, field="question")
    assert list(frame["prompt"]) == ["What is 2+2?", "42", "parts work"]
    assert "question" not in frame.columns  # it became `prompt`
    assert frame["meta"][0] == '{"level": 1}'  # nested values as JSON text
    assert run.notes[-1] == f"{objects}[2]: no 'question' field and no 'messages' list"


def test_bad_jsonl_lines_are_counted_and_noted(run, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "ok"}\n{"prompt": \n\n[1]\n{"prompt": "also ok"}\n')
    frame = read(run, path)
    assert list(frame["prompt"]) == ["ok", "also ok"]
    assert list(frame["source_line"]) == [1, 5]
    assert run.counts == {"source.bad_lines": 1, "source.skipped_records": 1}
    assert run.notes[0].startswith(f"{path}:2: invalid JSON")
    assert run.notes[1] == f"{path}:4: expected a string or an object, got list"


def test_numbered_markdown_folder_in_numeric_order(run, tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    for n in (1, 2, 9, 10, 11):
        (folder / f"{n}-step.md").write_text(f"# Step {n}\n\nDo step {n}.\n")
    (folder / "README.md").write_text("# About\n")
    (folder / "notes.txt").write_text("not a task\n")
    frame = read(run, folder)
    assert list(frame["title"]) == ["Step 1", "Step 2", "Step 9", "Step 10", "Step 11"]
    assert frame["prompt"][3] == "# Step 10\n\nDo step 10."
    assert run.notes == (
        f"{folder / 'README.md'}: not numbered, skipped among numbered task files",
    )


def test_example_course_folder(run):
    frame = read(run, EXAMPLES / "course")
    assert list(frame["title"]) == [
        "Set up the project",
        "Store notes in SQLite",
        "Full-text search",
    ]
    assert list(frame.columns) == ["prompt", "title", "source_file", "source_index"]
    assert frame["source_file"][0].endswith("01-setup.md")


MD = """# Backlog

Intro that is not a task.

## Fix login
Users get logged out after 5 minutes.

```python
## not a heading: inside a code fence
```

## Add dark mode ##
Follow the system setting.
"""


def test_markdown_whole_file_or_split_on_headings(run, tmp_path):
    path = tmp_path / "backlog.md"
    path.write_text(MD)
    [whole] = read(run, path).to_dict(orient="records")
    assert whole["prompt"] == MD.strip() and whole["title"] == "Backlog"
    frame = read(run, path, split_headings=2)
    assert list(frame["title"]) == ["Fix login", "Add dark mode"]
    assert frame["prompt"][0].startswith("## Fix login\nUsers get logged out")
    assert "## not a heading" in frame["prompt"][0]
    assert list(frame["source_index"]) == [0, 1]
    assert run.counts["source.skipped_preambles"] == 1
    [top] = read(run, path, split_headings=1).to_dict(orient="records")
    assert top["title"] == "Backlog" and top["prompt"] == MD.strip()


def test_split_without_matching_heading_keeps_whole_file(run, tmp_path):
    path = tmp_path / "one.md"
    path.write_text("Just do the thing.\n")
    assert list(read(run, path, split_headings=2)["prompt"]) == ["Just do the thing."]
    assert run.notes == (f"{path}: no level-2 heading; the whole file is one prompt",)
    assert split_sections("no headings", 1) is None


def test_glob_in_natural_order(run, tmp_path):
    for n in (10, 2):
        (tmp_path / f"part{n}.txt").write_text(f"prompt {n}\n")
    assert list(read(run, tmp_path / "part*.txt")["prompt"]) == ["prompt 2", "prompt 10"]


def test_empty_and_unsupported_input_are_clear_errors(run, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(PromptsInputError, match="no prompts found in"):
        read(run, empty)
    other = tmp_path / "data.csv"
    other.write_text("prompt\nhi\n")
    with pytest.raises(PromptsInputError, match=r"supported are \.json, \.jsonl, \.markdown"):
        read(run, other)
    with pytest.raises(ValidationError, match="path\n  does not exist"):
        PromptsOptions(path=str(tmp_path / "missing.txt"))  # before a run folder exists
    with pytest.raises(ValidationError, match="nothing matches this glob"):
        PromptsOptions(path=str(tmp_path / "missing-*.txt"))
    options = options_with_path_gone(PromptsOptions, tmp_path / "gone.txt", "hi\n")
    with pytest.raises(PromptsInputError, match="nothing matches"):
        PromptsSource().open(options, run)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(PromptsInputError, match="no prompt files"):
        read(run, folder)
    scalar = tmp_path / "n.json"
    scalar.write_text("3")
    with pytest.raises(PromptsInputError, match="must hold a list of strings or objects"):
        read(run, scalar)
    with pytest.raises(ValueError, match="split_headings"):
        PromptsOptions(path="x.md", split_headings=3)


def test_cli_run_writes_prompt_rows(bashgym_cli, bashgym_env):
    out = bashgym_env.workdir / "out"
    result = bashgym_cli(
        "run", "--source", "prompts", "--set", f"source.path={EXAMPLES / 'course'}",
        "--sink", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table["title"]) == [
        "Set up the project",
        "Store notes in SQLite",
        "Full-text search",
    ]
    assert table["prompt"][1].startswith("# Store notes in SQLite")
