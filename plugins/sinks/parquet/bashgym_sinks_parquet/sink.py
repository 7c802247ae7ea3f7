"""Write a dataset as Parquet with pyarrow; files appear atomically (written aside, renamed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bashgym_split.arrow import Typed, arrow_table, concat, note
from pydantic import Field

from bashgym.contracts import Options, RunContext, Sink, SinkStream, Written

NAME = "parquet"


class ParquetOptions(Options):
    path: str | None = Field(
        default=None,
        description=(
            "Output file, or with shard_rows the folder of its shards; default: "
            "RUN_DIR/data.parquet, with shard_rows RUN_DIR/parquet/part-*.parquet."
        ),
    )
    shard_rows: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Rows per shard, written as part-00000-of-0000N.parquet in the path's folder; "
            "unset writes one file."
        ),
    )
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"


class ParquetSink(Sink[ParquetOptions]):
    """Parquet, one file or shards, readable by pyarrow, pandas and `datasets`."""

    def stream(self, options: ParquetOptions, run: RunContext, output_format: str) -> SinkStream:
        return ArrowBatches(lambda typed: self.write_table(typed, options, run))

    def write(
        self, dataset: pd.DataFrame, options: ParquetOptions, run: RunContext, output_format: str
    ) -> Written:
        return self.write_table(arrow_table(dataset), options, run)

    def write_table(self, typed: Typed, options: ParquetOptions, run: RunContext) -> Written:
        """Write the table; a column stored as text because Arrow could not type its values
        (`bashgym_split.arrow`) is named in a run note, so a reader knows to parse it."""
        said = note(NAME, typed.converted)
        if said:
            run.note(said)
        table = portable(typed.table)
        compression = None if options.compression == "none" else options.compression
        if options.shard_rows is None:
            target = Path(options.path) if options.path else run.run_dir / "data.parquet"
            return Written([_write(table, target, compression)], table.num_rows)
        folder = Path(options.path) if options.path else run.run_dir / "parquet"
        starts = range(0, max(table.num_rows, 1), options.shard_rows)
        return Written(
            [
                _write(
                    table.slice(start, options.shard_rows),
                    folder / f"part-{i:05d}-of-{len(starts):05d}.parquet",
                    compression,
                )
                for i, start in enumerate(starts)
            ],
            table.num_rows,
        )


class ArrowBatches(SinkStream):
    """Each batch kept as an Arrow table (its strings in Arrow buffers: about their bytes, where
    the DataFrame's Python strings take several times that) and written as one table at the end.
    Why not a ParquetWriter per row group: the file's schema is fixed by its first batch, and a
    column that is all null there (a field no early row has) would refuse every later value,
    and one of text there and numbers later must become text in every batch (`concat`)."""

    def __init__(self, write: Callable[[Typed], Written]) -> None:
        self.write_table = write
        self.tables: list[Typed] = []

    def add(self, batch: pd.DataFrame) -> None:
        self.tables.append(arrow_table(batch))

    def close(self) -> Written:
        tables = [t for t in self.tables if t.table.num_columns] or self.tables[:1]
        if not tables:
            return self.write_table(Typed(pa.table({}), []))
        return self.write_table(concat(tables))

    def discard(self) -> None:
        self.tables = []


def portable(table: pa.Table) -> pa.Table:
    """The table without pandas' dtype notes when they name Arrow-backed nested types.

    DataDesigner hands back columns such as `struct<answer: string>[pyarrow]`; pandas records
    that name in the file's metadata and then cannot parse it back (`pd.read_parquet` raises
    "data type not understood"). The Arrow schema alone round-trips (structs become dicts).
    """
    meta = (table.schema.metadata or {}).get(b"pandas")
    if meta and b"[pyarrow]" in meta:
        return table.replace_schema_metadata(
            {k: v for k, v in table.schema.metadata.items() if k != b"pandas"}
        )
    return table


def _write(table: pa.Table, target: Path, compression: str | None) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, tmp, compression=compression)
    tmp.replace(target)
    return target
