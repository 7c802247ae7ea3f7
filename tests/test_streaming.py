"""A run from a source straight to its sinks streams: the rows go through in batches (memory
holds one batch, not the dataset), each scrubbed once, `-n` stops reading the source early, every
count is what was written, and a crash mid-stream leaves no partial file."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bashgym import engine, hookimpl
from bashgym.contracts import Judge, RunContext, Sink, SinkStream, Source, Written

SECRET = "ghp_" + "x7Kd9Qm2Lp4Rt6Vw8Yz1Bc3Fg5Hj7Nq9Sa2D"  # a GitHub token's shape


class Counting(Source):
    """`rows` rows of prompt/response, counting what was pulled; raises at row `boom`."""

    def __init__(self, rows: int, boom: int | None = None) -> None:
        self.rows, self.boom, self.pulled = rows, boom, 0

    def open(self, options, run: RunContext):
        for i in range(self.rows):
            if i == self.boom:
                raise RuntimeError(f"source broke at row {i}")
            self.pulled += 1
            yield {"id": f"r{i}", "prompt": f"say {i} with {SECRET}", "response": f"{i}"}


class DropMultiplesOfFive(Judge):
    def verdicts(self, dataset: pd.DataFrame, options, run) -> pd.Series:
        return dataset["response"].map(lambda r: None if int(r) % 5 else "a multiple of five")


class Recording(Sink):
    """Records the size of each batch its stream is given, and what it was given."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.seen: list[str] = []

    def write(self, dataset, options, run, output_format) -> Written:
        raise AssertionError("a streamed run adds batches; it never calls write()")

    def stream(self, options, run, output_format) -> SinkStream:
        sink = self

        class Stream(SinkStream):
            def __init__(self) -> None:
                self.rows = 0

            def add(self, batch: pd.DataFrame) -> None:
                sink.batches.append(len(batch))
                sink.seen.extend(batch["prompt"])
                self.rows += len(batch)

            def close(self) -> Written:
                return Written([], self.rows)

            def discard(self) -> None:
                sink.batches.append(-1)

        return Stream()


def plugin(source: Source, sink: Recording):
    class P:
        @hookimpl
        def register_sources(self, register):
            register("counting", source)

        @hookimpl
        def register_judges(self, register):
            register("fives", DropMultiplesOfFive())

        @hookimpl
        def register_sinks(self, register):
            register("recording", sink)

    return P()


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(engine, "BATCH_ROWS", 7)


def run(bashgym_cli, out, *extra):
    return bashgym_cli(
        "run", "-s", "counting", "-j", "fives", "-k", "recording", "-k", "nemo-jsonl",
        "-k", "parquet", "--out", out, *extra,
    )  # fmt: skip


def test_rows_stream_through_in_batches_scrubbed_once_and_counted_true(
    bashgym_cli, bashgym_env, register_plugin, small_batches
):
    source, sink = Counting(30), Recording()
    register_plugin(plugin(source, sink), "streaming")
    out = bashgym_env.workdir / "run"
    result = run(bashgym_cli, out)
    assert result.exit_code == 0, result.output
    # 30 rows in batches of at most 7, judged before the sinks: 6 multiples of five dropped
    assert max(sink.batches) <= 7 and len(sink.batches) == 5 and sum(sink.batches) == 24
    assert not any(SECRET in p for p in sink.seen)  # scrubbed before any sink sees a row
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table["id"]) == [f"r{i}" for i in range(30) if i % 5]  # order kept
    lines = [
        json.loads(x)
        for name in ("train.jsonl", "val.jsonl")
        if (out / "nemo-jsonl" / name).exists()
        for x in (out / "nemo-jsonl" / name).read_text().splitlines()
    ]
    assert len(lines) == 24 and SECRET not in json.dumps(lines)
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    assert manifest["rows_in"] == 24 and sum(manifest["counts"].values()) == 24
    assert manifest["counts"]["val"] >= 1  # the split's repair still applies across batches
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    assert counts["source_rows"] == 30 and counts["generated"] == 30
    assert counts["kept_by_sink"] == {"recording": 24, "nemo-jsonl": 24, "parquet": 24}
    assert counts["dropped"] == {"judge fives: a multiple of five": 6}
    assert summary["scrub"]["rows_touched"] == 30  # once each, not again before the sinks
    dropped = (out / "dropped.jsonl").read_text().splitlines()
    assert len(dropped) == 6 and SECRET not in "".join(dropped)


def test_a_cap_stops_reading_the_source(bashgym_cli, bashgym_env, register_plugin, small_batches):
    source, sink = Counting(1000), Recording()
    register_plugin(plugin(source, sink), "streaming")
    out = bashgym_env.workdir / "run"
    result = run(bashgym_cli, out, "-n", "10")
    assert result.exit_code == 0, result.output
    assert source.pulled <= 14  # two batches of 7, not the whole source
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["generated"] == 10 and summary["counts"]["source_rows"] <= 14
    assert summary["counts"]["kept_by_sink"]["parquet"] == 8  # 10 read, r0 and r5 dropped


def test_a_source_that_breaks_mid_stream_leaves_no_partial_file(
    bashgym_cli, bashgym_env, register_plugin, small_batches
):
    source, sink = Counting(30, boom=20), Recording()
    register_plugin(plugin(source, sink), "streaming")
    out = bashgym_env.workdir / "run"
    with pytest.raises(RuntimeError, match="source broke at row 20"):
        run(bashgym_cli, out)
    assert sink.batches[-1] == -1  # discarded
    assert sink.batches[:-1] == [5, 6]  # the batches before the break (rows 0-13), judged
    folder = out / "nemo-jsonl"
    assert not folder.exists() or not list(
        folder.iterdir()
    )  # no train.jsonl of 21 rows a trainer would take for the dataset
    assert not (out / "data.parquet").exists()
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "failed" and "source broke at row 20" in summary["error"]


def test_a_batch_keeps_trace_text_as_python_strings():
    """The trace column of a streamed batch is the text the source's rows held (object dtype,
    the same str objects, where it was), the other columns as pandas infers them: copying each
    batch's text into Arrow and back out for the scrubber and the sinks was a fifth of a run."""
    from bashgym.records import Message, Trace, trace_to_row

    rows = [trace_to_row(Trace(id=f"t{i}", messages=[Message(role="user", content="hi")]))
            for i in range(3)]  # fmt: skip
    texts = [row["trace"] for row in rows]
    columns = list(rows[0])
    frame = engine._frame(rows)
    assert list(frame.columns) == columns and frame["trace"].dtype == object
    assert all(a is b for a, b in zip(frame["trace"], texts, strict=True))
    assert frame["num_messages"].dtype == "int64" and frame["trace_id"].dtype != object
    assert list(engine._frame([{"a": 1}]).columns) == ["a"]  # rows without a trace column
