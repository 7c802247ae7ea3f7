"""Columns Arrow cannot give one type (text and numbers, an object, a list and a string) are
written as text, losslessly, and named in a run note; a column of one type is unchanged."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bashgym_sinks_parquet.sink import ParquetOptions, ParquetSink

from bashgym.contracts import RunContext
from bashgym.settings import Settings

NESTED = [{"a": [1, 2]}, [1, 2], "plain", None]


def test_mixed_columns_are_stored_as_text_and_named_in_a_note(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    frame = pd.DataFrame(
        {
            "prompt": ["a", "b", "c", "d"],
            "response": ["x", 42, 1.5, None],
            "nested": NESTED,
            "n": [1, 2, 3, 4],
            "meta": [{"k": 1}, {"k": 2}, {"k": 3}, {"k": 4}],
        }
    )
    written = ParquetSink().write(frame, ParquetOptions(), run, "rows")
    assert written.rows == 4
    table = pq.read_table(tmp_path / "data.parquet")
    back = table.to_pylist()
    assert [r["response"] for r in back] == ["x", "42", "1.5", None]
    assert [None if r["nested"] is None else json.loads(r["nested"]) for r in back] == NESTED
    # the columns Arrow could type are as `from_pandas` makes them
    assert table.schema.field("n").type == pa.int64()
    assert table.schema.field("meta").type == pa.struct([("k", pa.int64())])
    assert [r["prompt"] for r in back] == ["a", "b", "c", "d"]
    assert pd.read_parquet(tmp_path / "data.parquet")["n"].tolist() == [1, 2, 3, 4]
    (note,) = run.notes
    assert note.startswith("parquet: ")
    assert "`response` mixes text, integer and number values: stored as text" in note
    assert "`nested` mixes object, list and text values: stored as JSON text" in note
    assert "`prompt`" not in note and "`meta`" not in note


def test_one_typed_columns_write_no_note(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    frame = pd.DataFrame({"prompt": ["a", None], "n": [1.0, None], "m": [{"k": 1}, None]})
    ParquetSink().write(frame, ParquetOptions(), run, "rows")
    assert pq.read_table(tmp_path / "data.parquet").schema.equals(
        pa.Table.from_pandas(frame, preserve_index=False).schema
    )
    assert run.notes == ()


def test_streamed_batches_of_different_types_make_one_text_column(tmp_path):
    """Each batch alone is of one type (text, then integers): only the merge finds the clash."""
    run = RunContext(run_dir=tmp_path, settings=Settings())
    out = ParquetSink().stream(ParquetOptions(), run, "rows")
    out.add(pd.DataFrame({"id": [1, 2], "response": ["x", "y"]}))
    out.add(pd.DataFrame({"id": [3], "response": [7]}))
    assert out.close().rows == 3
    table = pq.read_table(tmp_path / "data.parquet")
    assert table.column("response").to_pylist() == ["x", "y", "7"]
    assert table.column("id").to_pylist() == [1, 2, 3]
    (note,) = run.notes
    assert "`response` mixes text and integer values: stored as text" in note


def test_a_batch_of_plain_strings_joins_a_json_column_as_json(tmp_path):
    """A column made JSON text in one batch is JSON text in every batch: a batch holding only
    strings is encoded too, so json.loads reads every row back."""
    run = RunContext(run_dir=tmp_path, settings=Settings())
    out = ParquetSink().stream(ParquetOptions(), run, "rows")
    out.add(pd.DataFrame({"nested": NESTED}))
    out.add(pd.DataFrame({"nested": ["late", "[1]"]}))
    out.add(pd.DataFrame({"nested": [{"a": [3]}]}))
    out.close()
    values = pq.read_table(tmp_path / "data.parquet").column("nested").to_pylist()
    assert [None if v is None else json.loads(v) for v in values] == [
        *NESTED,
        "late",
        "[1]",
        {"a": [3]},
    ]
    (note,) = run.notes
    assert "`nested` mixes object, list and text values: stored as JSON text" in note


def test_a_run_with_a_mixed_column_finishes_and_records_the_note(bashgym_cli, bashgym_env):
    source = bashgym_env.workdir / "mixed.jsonl"
    source.write_text('{"prompt": "a", "response": "x"}\n{"prompt": "b", "response": 42}\n')
    out = bashgym_env.workdir / "R"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={source}", "-k", "parquet", "--out", out
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    table = pq.read_table(out / "data.parquet")
    assert table.column("response").to_pylist() == ["x", "42"]
    notes = json.loads((out / "run.json").read_text())["notes"]
    assert any("`response` mixes text and integer values" in n for n in notes), notes
