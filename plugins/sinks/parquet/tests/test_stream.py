"""The parquet sink fed in batches (a streamed run): one file with every batch's rows in order,
even when a column is empty in the first batch and filled later."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
from bashgym_sinks_parquet.sink import ParquetOptions, ParquetSink

from bashgym.contracts import RunContext
from bashgym.settings import Settings


def test_batches_make_one_file_and_a_late_filled_column_keeps_its_values(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    out = ParquetSink().stream(ParquetOptions(), run, "rows")
    out.add(pd.DataFrame({"id": [1, 2], "note": [None, None]}))
    out.add(pd.DataFrame({"id": [3], "note": ["late"]}))
    written = out.close()
    table = pq.read_table(tmp_path / "data.parquet").to_pandas()
    assert written.rows == 3 and list(table["id"]) == [1, 2, 3]
    assert list(table["note"])[2] == "late" and table["note"].isna().sum() == 2


def test_a_discarded_stream_writes_nothing(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    out = ParquetSink().stream(ParquetOptions(), run, "rows")
    out.add(pd.DataFrame({"id": [1]}))
    out.discard()
    assert not (tmp_path / "data.parquet").exists()
