"""A pipeline's finalize that drops rows hands them back whole (a `Generated`): dropped.jsonl
lists each with its reason beside the runner's and the judges' drops, in a finished run and in
one stopped in a later round (Ctrl-C in its finalize, or a judge's error after it); run.json's
counts still add up. And a runner that fails in a later round before returning its rows leaves
them pending, so the rows asked in all rounds add up.

Real `--top-up` runs through the CLI, DataDesigner and the engine against the scripted model
server: six items, a finalize that leaves out item 5, a judge that drops items 0-2. Round 1
makes 6 rows (5 after finalize, 2 kept); round 2 asks 12 (the pass rate so far): items 0-5
twice."""

from __future__ import annotations

import json
import signal

import pytest
from bashgym_testing.plugins import (
    BrokenDropLow,
    DropLow,
    EchoLeavingOut,
    EchoPlugin,
    run_echo_top_up,
)

LEFT_OUT = "pipeline echo: finalize: item 5 is left out"


class StoppedInRoundTwo(EchoLeavingOut):
    """`EchoLeavingOut` stopped in round 2: Ctrl-C in its finalize (`finalize`), or its build
    failing (`build`: the runner fails before it returns the round's rows)."""

    def __init__(self, where: str) -> None:
        self.where, self.builds, self.finalized = where, 0, 0

    def build(self, options, run, seed):
        self.builds += 1
        if self.where == "build" and self.builds == 2:
            raise RuntimeError("the build broke")
        return super().build(options, run, seed)

    def finalize(self, dataset, options, run):
        self.finalized += 1
        if self.where == "finalize" and self.finalized == 2:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C during a long finalize
        return super().finalize(dataset, options, run)


def top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, plugin):
    from bashgym_testing.server import default_reply

    scripted_models.server.add_rule(lambda r: True, default_reply)
    register_plugin(plugin, "echo-plugin")
    return run_echo_top_up(bashgym_cli, bashgym_env)


def read(out):
    summary = json.loads((out / "run.json").read_text())
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    return summary, summary["counts"], rows


def test_a_finished_run_lists_the_rows_its_finalize_dropped(
    bashgym_cli, bashgym_env, register_plugin, scripted_models
):
    """Before: run.json counted 3 rows left out by finalize, dropped.jsonl held none of them."""
    plugin = EchoPlugin(EchoLeavingOut(), DropLow())
    result, out = top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, plugin)
    assert result.exit_code == 0, result.output
    summary, counts, rows = read(out)
    assert [r["generated"] for r in summary["rounds"]] == [5, 10]
    assert counts["dropped"] == {LEFT_OUT: 1 + 2, "judge droplow: low": 3 + 6}
    assert (
        counts["requested_in_rounds"] == 6 + 12 == counts["generated"] + counts["dropped"][LEFT_OUT]
    )
    assert len(rows) == counts["dropped_total"] == 12
    # the generation's drops first (round 1's, then round 2's), then the judge's
    assert [(r["by"], r["reason"], r["row"]["item"]) for r in rows[:3]] == [
        ("pipeline echo", "finalize: item 5 is left out", "item 5")
    ] * 3
    assert all(r["row"]["s"]["answer"] for r in rows[:3])  # the row whole, its answer too
    assert {r["by"] for r in rows[3:]} == {"judge droplow"}
    page = (out / "report.html").read_text()
    assert "finalize: item 5 is left out" in page.split("Examples of dropped rows")[1]


@pytest.mark.parametrize("where", ["finalize", "judge"])
def test_a_run_stopped_in_round_two_still_lists_the_finalize_drops(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, where
):
    """Ctrl-C in round 2's finalize: round 1's left-out row is in dropped.jsonl. A judge's
    error in round 2: round 2's finalize returned, so its two are there too, and not counted
    again among the round's rows made (stopped_round_rows)."""
    pipeline = StoppedInRoundTwo("finalize" if where == "finalize" else "")
    plugin = EchoPlugin(pipeline, BrokenDropLow(fail=where == "judge"))
    if where == "judge":
        with pytest.raises(RuntimeError, match="the judge broke"):  # a bug: the traceback's
            top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, plugin)
        out = bashgym_env.workdir / "run"
    else:
        result, out = top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, plugin)
        assert result.exit_code == 130, result.output
    summary, counts, rows = read(out)
    assert summary["status"] == ("interrupted" if where == "finalize" else "failed")
    left_out = 1 if where == "finalize" else 3
    assert counts["dropped"] == {LEFT_OUT: left_out, "judge droplow: low": 3}
    assert (counts["rounds"], counts["requested_in_rounds"], counts["generated"]) == (2, 18, 5)
    assert counts["stopped_round_rows"] == 12 - (left_out - 1)
    assert counts["requested_in_rounds"] == (
        counts["generated"] + counts["dropped"][LEFT_OUT] + counts["stopped_round_rows"]
    )
    assert len(rows) == counts["dropped_total"]
    assert [(r["by"], r["row"]["item"]) for r in rows[:left_out]] == [
        ("pipeline echo", "item 5")
    ] * left_out
    assert [r["by"] for r in rows[left_out:]] == ["judge droplow"] * 3


def test_a_runner_that_fails_in_round_two_leaves_its_rows_pending(
    bashgym_cli, bashgym_env, register_plugin, scripted_models
):
    """Round 2's build fails inside the runner, before it returns any row. Before: run.json
    said 18 rows asked in 2 rounds, but only round 1's 6 were anywhere (5 made, 1 dropped)."""
    plugin = EchoPlugin(StoppedInRoundTwo("build"), DropLow())
    result, out = top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, plugin)
    assert result.exit_code == 2, result.output  # the runner names the pipeline that failed
    assert "failed to build its config: RuntimeError: the build broke" in result.output
    summary, counts, rows = read(out)
    assert summary["status"] == "failed"
    assert (counts["rounds"], counts["requested_in_rounds"]) == (2, 18)
    assert (counts["generated"], counts["pending"]) == (5, 12)
    assert not counts.get("stopped_round_rows")
    assert counts["requested_in_rounds"] == (
        counts["generated"] + counts["dropped"][LEFT_OUT] + counts["pending"]
    )
    assert [r["by"] for r in rows] == ["pipeline echo"] + ["judge droplow"] * 3
