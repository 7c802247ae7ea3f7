"""A `--top-up` run stopped in its second round by something other than its model: Ctrl-C
while the runner makes the round's rows, Ctrl-C during the pipeline's finalize, or a judge
that fails. run.json still says what was asked in both rounds and where every row asked is
(made, dropped, made in the stopped round, pending), and dropped.jsonl holds the runner's drops
of the finished round and of the stopped one.

Real runs through the CLI, DataDesigner and the engine against the scripted model server; the
Ctrl-C is a real SIGINT to the main thread."""

from __future__ import annotations

import json
import signal
import threading

import pandas as pd
import pytest
from bashgym_testing.plugins import BrokenDropLow, Echo, EchoPlugin


class InterruptedEcho(Echo):
    """`Echo` whose finalize sends Ctrl-C in round 2 when `interrupt_finalize` is set."""

    def __init__(self, interrupt_finalize: bool) -> None:
        self.interrupt_finalize, self.rounds = interrupt_finalize, 0

    def finalize(self, dataset, options, run):
        self.rounds += 1
        if self.interrupt_finalize and self.rounds == 2:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C during a long finalize
        return dataset


def echo_plugin(interrupt_finalize: bool = False, judge_fails: bool = False) -> EchoPlugin:
    """The echo plugin: `echo` that may be Ctrl-C'd in its finalize, `droplow` that may fail."""
    return EchoPlugin(InterruptedEcho(interrupt_finalize), BrokenDropLow(judge_fails))


def top_up(bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch, plugin,
           interrupt_round_two=False):  # fmt: skip
    """Six items in batches of two, a judge that drops items 0-2, --top-up; item 4's answer
    never parses. Round 1: 5 made, 2 kept; round 2 asks 12 (the pass rate so far), items 0-5
    twice. `interrupt_round_two`: Ctrl-C as round 2's first request comes in. Returns the
    run's folder and the CLI's result (None: the judge's error came out of it)."""
    from bashgym_testing.server import Reply, default_reply

    for name, value in (("BUFFER_SIZE", "2"), ("MAX_CONCURRENT_ROW_GROUPS", "1")):
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    register_plugin(plugin, "echo-plugin")
    seen: set[str] = set()
    fired: list[str] = []

    def round_two(request):  # an item asked again: round 2 (item 4's retries aside)
        text = request.last_user_text
        again = text in seen and text != "Reply with OK."
        seen.add(text)
        if again and interrupt_round_two and not fired:
            fired.append(text)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # Ctrl-C
        return False

    scripted_models.server.add_rule("item 4", Reply("no json here"))
    scripted_models.server.add_rule(round_two, default_reply)  # never matches: it watches
    scripted_models.server.add_rule(lambda r: True, default_reply)
    seed = bashgym_env.workdir / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(6)]}).to_csv(seed, index=False)
    out = bashgym_env.workdir / "run"
    args = ["run", "-s", "files", "--set", f"source.path={seed}", "-p", "echo", "-j", "droplow",
            "-k", "parquet", "--top-up", "--out", out]  # fmt: skip
    if not plugin.judge.fail:
        return out, bashgym_cli(*args)
    with pytest.raises(RuntimeError, match="the judge broke"):  # a bug: the traceback's
        bashgym_cli(*args)
    return out, None


def runner_drops(counts):
    return sum(n for reason, n in counts["dropped"].items() if reason.startswith("pipeline column"))


@pytest.mark.parametrize("where", ["finalize", "judge"])
def test_a_round_stopped_after_its_rows_were_made_counts_them_and_hands_back_its_drops(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch, where
):
    """Round 2 made 10 rows (item 4's two never parsed) when Ctrl-C came in its finalize, or
    its judge failed. Before: run.json counted nothing of what was asked (no requested, no
    generated, no rounds) and dropped.jsonl held the judge's 3 rows only."""
    plugin = echo_plugin(interrupt_finalize=where == "finalize", judge_fails=where == "judge")
    out, result = top_up(
        bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch, plugin
    )
    summary = json.loads((out / "run.json").read_text())
    if where == "finalize":
        assert result.exit_code == 130, result.output
        assert summary["status"] == "interrupted"
    else:
        assert summary["status"] == "failed" and "the judge broke" in summary["error"]
    counts = summary["counts"]
    assert counts["requested"] == 6
    assert (counts["rounds"], counts["requested_in_rounds"]) == (2, 6 + 12)
    assert counts["generated"] == 5  # round 1's rows after its finalize
    assert counts["stopped_round_rows"] == 10 and not counts.get("pending")
    assert runner_drops(counts) == 3 and counts["dropped"]["judge droplow: low"] == 3
    assert counts["requested_in_rounds"] == (
        counts["generated"] + runner_drops(counts) + counts["stopped_round_rows"]
    )
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert [(r["by"], r["row"]["prompt"].split("\n")[0]) for r in rows[:3]] == [
        ("pipeline column s", "Answer item 4")
    ] * 3, rows
    assert [r["by"] for r in rows[3:]] == ["judge droplow"] * 3
    assert len(rows) == counts["dropped_total"]


def test_ctrl_c_while_the_runner_makes_round_two_counts_its_rows_pending(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
):
    """Ctrl-C as round 2's first request comes in: the runner counts none of its 12 rows.
    Before: requested_in_rounds said 18 but only 6 rows were anywhere (5 made, 1 dropped)."""
    out, result = top_up(
        bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch, echo_plugin(),
        interrupt_round_two=True,
    )  # fmt: skip
    assert result.exit_code == 130, result.output
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    assert summary["status"] == "interrupted"
    assert (counts["requested"], counts["rounds"], counts["requested_in_rounds"]) == (6, 2, 18)
    assert (counts["generated"], runner_drops(counts), counts["pending"]) == (5, 1, 12)
    assert not counts.get("stopped_round_rows")
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert [r["by"] for r in rows] == ["pipeline column s"] + ["judge droplow"] * 3
    assert len(rows) == counts["dropped_total"]
