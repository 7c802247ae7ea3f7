"""`generated` is what the pipeline produced: its rows after `finalize`, which may drop rows or
make several of one. What the judges and each sink drop then comes out of those, so kept + the
drops after generation = generated for every sink, and kept never exceeds generated. A sink's
drops land in dropped.jsonl beside every other drop, with the row's id and the reason.

A real run through the CLI, DataDesigner and the engine: a seed of four tasks, a pipeline whose
finalize drops one task's row (handing it back whole) and makes three rows of each other, a
judge and a picky sink."""

from __future__ import annotations

import json

from bashgym_testing.plugins import Picky, TriplePlugin, run_triple

SECRET = "ghp_" + "x7Kd9Qm2Lp4Rt6Vw8Yz1Bc3Fg5Hj7Nq9Sa2D"  # a GitHub token's shape


def test_generated_counts_the_finalized_rows_and_every_count_adds_up(
    bashgym_cli, bashgym_env, register_plugin
):
    register_plugin(TriplePlugin(Picky(secret=SECRET)), "triple-plugin")
    result, out = run_triple(bashgym_cli, bashgym_env)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    # 4 rows asked and made; finalize drops b's and makes 3 of each other: 9 produced
    assert counts["requested"] == 4 and counts["generated"] == 9
    assert summary["rounds"] == [dict(requested=4, generated=9, kept=6, resumed_rows=0)]
    assert counts["dropped"] == {
        "pipeline triple: finalize: b has no parts": 1,  # before generated: not one of the 9
        "judge no-third: a third part": 3,
        "sink picky: c is refused": 2,
    }
    assert counts["kept_by_sink"] == {"parquet": 6, "picky": 4} and counts["kept"] == 4
    assert counts["kept"] <= counts["generated"]
    for sink, kept in counts["kept_by_sink"].items():  # the drops after generation, per sink
        after = ("judge ", f"sink {sink}:")
        lost = sum(n for reason, n in counts["dropped"].items() if reason.startswith(after))
        assert kept + lost == counts["generated"], sink
    assert "9 generated, 6 kept in parquet and 4 in picky" in " ".join(result.output.split())

    # every drop is in dropped.jsonl with who and why: the sink's too, once each, scrubbed
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert SECRET not in json.dumps(dropped)
    by_sink = [d for d in dropped if d["by"] == "sink picky"]
    assert [d["reason"] for d in by_sink] == ["c is refused"] * 2
    assert [d["row"]["row_id"].split()[0] for d in by_sink] == ["c-0", "c-1"]
    assert len(dropped) == counts["dropped_total"]  # finalize's too: it hands its row back
    # finalize's first (the generation's), then the judge's, then the sink's
    assert [d["by"] for d in dropped] == ["pipeline triple"] + ["judge no-third"] * 3 + [
        "sink picky"
    ] * 2
    assert (dropped[0]["reason"], dropped[0]["row"]["task"]) == ("finalize: b has no parts", "b")
    assert dropped[0]["row"]["prompt"] == "do b"  # the row whole, as finalize had it
    assert summary["artifacts"]["dropped_rows"] == str(out / "dropped.jsonl")
