"""The parquet sink: one file, shards, compression, and a schema pyarrow reads back."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
from bashgym_sinks_parquet.sink import ParquetOptions, ParquetSink

from bashgym.contracts import RunContext
from bashgym.settings import Settings


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "i": range(n),
            "text": [f"row {i}" for i in range(n)],
            "tags": [["a", "b"][: i % 3] for i in range(n)],
        }
    )


def test_single_file_default_location(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    written = ParquetSink().write(frame(7), ParquetOptions(), run, "rows")
    assert written.rows == 7
    paths = written.paths
    assert paths == [tmp_path / "data.parquet"]
    back = pq.read_table(paths[0]).to_pandas()
    assert back["text"].tolist() == [f"row {i}" for i in range(7)]
    assert [list(t) for t in back["tags"]] == [["a", "b"][: i % 3] for i in range(7)]
    assert not list(tmp_path.glob(".*.tmp"))  # written aside, then renamed


def test_shards_cover_every_row_once(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    written = ParquetSink().write(
        frame(23), ParquetOptions(shard_rows=10, compression="snappy"), run, "rows"
    )
    assert written.rows == 23
    paths = written.paths
    assert [p.name for p in paths] == [f"part-0000{i}-of-00003.parquet" for i in range(3)]
    assert [pq.read_metadata(p).num_rows for p in paths] == [10, 10, 3]
    assert pq.read_metadata(paths[0]).row_group(0).column(0).compression == "SNAPPY"
    assert pq.read_table(tmp_path / "parquet").to_pandas()["i"].tolist() == list(range(23))


def test_explicit_path_and_empty_dataset(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    target = tmp_path / "nested" / "out.parquet"
    paths = ParquetSink().write(frame(0), ParquetOptions(path=str(target)), run, "rows").paths
    assert paths == [target] and pq.read_metadata(target).num_rows == 0
