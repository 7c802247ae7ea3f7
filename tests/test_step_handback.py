"""A step stopped by an exception hands the engine the rows it dropped so far through the
exception's `dropped` (work-rounds does: its runner's drops then reach dropped.jsonl). Any
exception may carry an attribute of that name: one that is not a list of dropped rows must
not hide the real error, nor leave run.json `running` (before, `dropped = 5` raised a
TypeError inside the engine's handler, and a list of strings broke dropped.jsonl's writing
after the steps)."""

from __future__ import annotations

import errno
import json

import pytest

from bashgym import hookimpl
from bashgym.contracts import Judge, Options, Sink


class NoB(Judge):
    def verdicts(self, dataset, options, run):
        return dataset["task"].map(lambda t: "b is out" if t == "b" else None)


class Burning(Sink[Options]):
    handed: object = None

    def write(self, dataset, options, run, output_format):
        exc = OSError(errno.ENOSPC, "No space left on device")
        exc.dropped = self.handed  # type: ignore[attr-defined]
        raise exc


@pytest.mark.parametrize("handed", [5, ["not a dropped row"], "abc"])
def test_an_odd_dropped_attribute_never_hides_the_error(
    bashgym_cli, bashgym_env, register_plugin, handed
):
    sink = Burning()
    sink.handed = handed

    class Plugin:
        @hookimpl
        def register_sinks(self, register):
            register("burning", sink)

        @hookimpl
        def register_judges(self, register):
            register("no-b", NoB())

    register_plugin(Plugin(), "burning-plugin")
    seed = bashgym_env.workdir / "seed.csv"
    seed.write_text("task\na\nb\n")
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-j", "no-b",
        "-k", "burning", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "the disk is full" in result.output  # the sink's error, in words
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "failed" and "No space left on device" in summary["error"]
    if isinstance(handed, list):  # a list of something else: the file is not written, said so
        assert any("dropped.jsonl could not be written" in n for n in summary["notes"])
        return
    # not a list: nothing is added, and the judge's real drop is in dropped.jsonl
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert [r["row"]["task"] for r in rows] == ["b"] and rows[0]["by"] == "judge no-b"
