"""`bashgym run --source <traces> --sink nemo-jsonl` end to end, through the real CLI and engine."""

from __future__ import annotations

import json

from bashgym_split import split_of

from bashgym import hookimpl
from bashgym.contracts import Source


def test_run_writes_split_files_and_counts(bashgym_cli, bashgym_env, register_plugin, make_trace):
    traces = [make_trace(i) for i in range(8)] + [make_trace(8, final=None)]

    class Traces(Source):
        """A few agent traces, one of them cut off after a tool result."""

        output_format = "traces"

        def open(self, options, run):
            return iter(traces)

    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register("test-traces", Traces())

    register_plugin(Plugin(), "test-traces-plugin")
    out = bashgym_env.workdir / "D"
    result = bashgym_cli(
        "run",
        "--source",
        "test-traces",
        "--sink",
        "nemo-jsonl",
        "--set",
        "sink.val_fraction=0.25",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    folder = out / "nemo-jsonl"
    train = [json.loads(x) for x in (folder / "train.jsonl").read_text().splitlines()]
    val = [json.loads(x) for x in (folder / "val.jsonl").read_text().splitlines()]
    expect_val = {i for i in range(8) if split_of(f"trace-{i}", 0, 0.25) == "validation"}
    got_val = {int(line["messages"][1]["content"].split("#")[1].split()[0]) for line in val}
    assert got_val == expect_val and len(train) + len(val) == 8
    assert all(line["tools"] and line["messages"][0]["role"] == "system" for line in train + val)

    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "ok"
    assert run["counts"]["nemo-jsonl.train"] == len(train)
    assert run["counts"]["nemo-jsonl.val"] == len(val)
    assert run["counts"]["dropped"] == {"sink nemo-jsonl: last message is not the assistant's": 1}
    assert run["outputs"]["nemo-jsonl"] == [
        str(folder / "train.jsonl"),
        str(folder / "val.jsonl"),
        str(folder / "manifest.json"),
    ]
    assert "val_fraction = 0.25" in (out / "run.toml").read_text()
