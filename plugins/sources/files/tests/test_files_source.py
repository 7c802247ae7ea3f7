"""The files source on every supported format, folders, globs, mapping and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from bashgym_sources_files.source import FilesOptions, FilesSource, SourceInputError
from bashgym_testing.paths import options_with_path_gone
from pydantic import ValidationError

from bashgym.contracts import RunContext
from bashgym.settings import Settings

ROWS = [
    {"question": "What is 2+2?", "answer": "4"},
    {"question": "Capital of France?", "answer": "Paris"},
]


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def read(run, **options) -> pd.DataFrame:
    return FilesSource().open(FilesOptions(**options), run)


@pytest.fixture
def data(tmp_path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    frame = pd.DataFrame(ROWS)
    frame.to_csv(folder / "a.csv", index=False)
    frame.to_parquet(folder / "b.parquet")
    (folder / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "d.json").write_text(json.dumps(ROWS))
    (folder / "notes.txt").write_text("ignored: not a table")
    return folder


@pytest.mark.parametrize("name", ["a.csv", "b.parquet", "c.jsonl", "d.json"])
def test_each_format_reads_the_same_rows(run, data, name):
    frame = read(run, path=str(data / name))
    assert frame[["question", "answer"]].to_dict(orient="records") == ROWS
    assert list(frame["source_row"]) == [0, 1]
    assert set(frame["source_file"]) == {str(data / name)}


def test_folder_and_glob(run, data):
    assert len(read(run, path=str(data))) == 8
    globbed = read(run, path=str(data / "*.js*"))
    assert sorted(set(globbed["source_file"])) == [str(data / "c.jsonl"), str(data / "d.json")]


def test_map_columns_and_provenance_off(run, data):
    frame = read(
        run,
        path=str(data / "a.csv"),
        map={"prompt": "question", "response": "answer"},
        columns=["prompt", "response"],
        provenance=False,
    )
    assert list(frame.columns) == ["prompt", "response"]
    assert frame.iloc[1]["response"] == "Paris"


def test_explicit_format_overrides_extension(run, tmp_path):
    path = tmp_path / "rows.data"
    path.write_text("x,y\n1,2\n")
    assert read(run, path=str(path), format="csv")["y"].tolist() == [2]


def test_bad_input_is_a_clear_error(run, data, tmp_path):
    with pytest.raises(ValidationError, match="path\n  does not exist"):
        FilesOptions(path=str(tmp_path / "missing.csv"))  # before a run folder exists
    with pytest.raises(ValidationError, match="nothing matches this glob"):
        FilesOptions(path=str(tmp_path / "missing" / "*.csv"))
    options = options_with_path_gone(FilesOptions, data / "gone.csv", "a\n1\n")
    with pytest.raises(SourceInputError, match="nothing matches"):
        FilesSource().open(options, run)
    with pytest.raises(SourceInputError, match=r"column\(s\) \['nope'\] not found"):
        read(run, path=str(data / "a.csv"), map={"prompt": "nope"})
    with pytest.raises(SourceInputError, match="supported are"):
        read(run, path=str(data / "notes.txt"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"a": \n[1]\n')  # no line a row: an error naming the file
    with pytest.raises(
        SourceInputError,
        match=r"broken\.jsonl' is not valid jsonl: none of its 2 lines is a JSON object \(line 1: "
        "invalid JSON",
    ):
        read(run, path=str(broken))
    with pytest.raises(ValueError, match="must name a file"):
        FilesOptions(path=" ")


def test_a_bad_jsonl_line_is_skipped_counted_and_noted(run, tmp_path):
    path = tmp_path / "corrupt.jsonl"
    path.write_text('{"q": "a"}\n{"q": \n\n[1, 2]\n{"q": "b"}\n')
    frame = read(run, path=str(path))
    assert frame["q"].tolist() == ["a", "b"]
    assert frame["source_row"].tolist() == [0, 3]  # data rows (non-blank lines), bad ones too
    assert run.counts["source.bad_lines"] == 2
    assert run.notes[0].startswith(f"{path}:2: invalid JSON (")
    assert run.notes[1] == f"{path}:4: expected a JSON object, got list"


def test_bad_line_notes_are_capped(run, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text('{"q": "a"}\n' + "{oops\n" * 12)
    assert len(read(run, path=str(path))) == 1
    assert run.counts["source.bad_lines"] == 12
    assert len(run.notes) == 11
    assert run.notes[-1] == (
        "files source: 2 more bad lines not listed (12 in all, counted as source.bad_lines)"
    )


@pytest.mark.parametrize(
    ("name", "text"), [("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("header.csv", "q,a\n")]
)
def test_a_file_with_no_rows_says_so(run, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SourceInputError, match=rf"'{path}' has no rows"):
        read(run, path=str(path))


def test_empty_files_among_others_are_skipped_and_noted(run, tmp_path):
    (tmp_path / "a.csv").write_text("q,a\n1,2\n")
    (tmp_path / "b.csv").write_text("q,a\n")  # header only
    (tmp_path / "c.csv").write_text("")  # not even a header
    frame = read(run, path=str(tmp_path / "*.csv"))
    assert frame["q"].tolist() == [1]
    assert run.counts["source.files"] == 1
    assert run.counts["source.empty_files"] == 2
    assert list(run.notes) == [
        f"{tmp_path / 'b.csv'}: no rows, skipped",
        f"{tmp_path / 'c.csv'}: no rows, skipped",
    ]
    (tmp_path / "a.csv").write_text("q,a\n")
    with pytest.raises(SourceInputError, match=r"none of the 3 files matching .* has rows"):
        read(run, path=str(tmp_path / "*.csv"))


def test_columns_naming_a_missing_column_is_an_error(run, data):
    with pytest.raises(
        SourceInputError,
        match=r"source\.columns names column\(s\) \['nosuch'\] the rows do not have "
        r"\(after --map\); columns are \['question', 'answer'\]",
    ):
        read(run, path=str(data / "a.csv"), columns=["question", "nosuch"])
    # provenance named among the columns is kept once
    frame = read(run, path=str(data / "a.csv"), columns=["answer", "source_row"])
    assert list(frame.columns) == ["answer", "source_row", "source_file"]
