"""A `--top-up` run its model stops in a later round: run.json says what was asked in all
rounds, the stopped one among them (a failed run has no `rounds` list), and dropped.jsonl holds
every row dropped on the way: the judges', and the runner's (a column that never parsed) of the
finished round and of the round it stopped in.

A real run through the CLI, DataDesigner and the engine against the scripted model server."""

from __future__ import annotations

import json

from bashgym_testing.plugins import DropLow, EchoPlugin, run_echo_top_up


def stopped_in_round_two(bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch):
    """Six items in batches of two, a judge that drops items 0-2, --top-up. Round 1: item 4's
    answer never parses, 5 made, 2 kept. Round 2 asks 12 (the pass rate so far): items 0 and 1
    (item 1's answer now never parses), then only 429s: 1 row made, 10 pending. Returns the
    run's folder (exit 1)."""
    from bashgym_testing.server import Fault, Reply, default_reply

    for name, value in (("BUFFER_SIZE", "2"), ("MAX_CONCURRENT_ROW_GROUPS", "1"),
                        ("RATE_LIMIT_GIVE_UP_S", "1")):  # fmt: skip
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    register_plugin(EchoPlugin(judge=DropLow()), "echo-plugin")
    seen, answered = set(), []

    def unparseable(request):  # item 4 always, item 1 from its second time on
        item = next((i for i in ("item 1", "item 4") if i in request.last_user_text), None)
        first = item == "item 1" and request.last_user_text not in seen
        seen.add(request.last_user_text)
        return item is not None and not first

    def answers(request):  # the start-up check, then 6 answers
        if request.last_user_text == "Reply with OK.":
            return True
        answered.append(1)
        return len(answered) <= 6

    scripted_models.server.add_rule(unparseable, Reply("no json here"))
    scripted_models.server.add_rule(answers, default_reply)
    scripted_models.server.add_rule(lambda r: True, Fault.status(429))
    result, out = run_echo_top_up(bashgym_cli, bashgym_env)
    assert result.exit_code == 1, result.output
    assert "10 of 12 rows pending" in " ".join(result.output.split())
    return out


def test_run_json_counts_the_rows_asked_in_every_round_the_stopped_one_too(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
):
    """Before: requested 6 and nothing else on what was asked (the 12 of round 2 unsaid)."""
    out = stopped_in_round_two(
        bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
    )
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    assert summary["status"] == "failed" and "rounds" not in summary  # no list: counts say it
    assert counts["requested"] == 6  # the rows wanted
    assert (counts["rounds"], counts["requested_in_rounds"]) == (2, 6 + 12)
    assert counts["generated"] == 5  # round 1's rows (round 2 never reached finalize)
    assert (counts["stopped_round_rows"], counts["pending"]) == (1, 10)
    dropped = counts["dropped"]
    failed = sum(n for reason, n in dropped.items() if reason.startswith("pipeline column s:"))
    assert failed == 2 and dropped["judge droplow: low"] == 3
    # every row asked is somewhere: made, dropped, stopped or pending
    assert counts["requested_in_rounds"] == (
        counts["generated"] + failed + counts["stopped_round_rows"] + counts["pending"]
    )


def test_dropped_jsonl_of_the_failed_run_holds_the_runners_drops_too(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
):
    """Before: only the judge's 3 rows; round 1's item 4 and round 2's item 1, whose answers
    never parsed, were counted in run.json but missing from dropped.jsonl."""
    out = stopped_in_round_two(
        bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
    )
    rows = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    by_judge = sorted(r["row"]["item"] for r in rows if r["by"] == "judge droplow")
    assert by_judge == ["item 0", "item 1", "item 2"]
    # the runner's first (as a finished run's), round 1's then the stopped round's
    assert [(r["by"], r["reason"], r["row"]["prompt"].split("\n")[0]) for r in rows[:2]] == [
        ("pipeline column s", "unparseable answer (no JSON found)", f"Answer item {i}")
        for i in (4, 1)
    ], rows
    assert [r["by"] for r in rows[2:]] == ["judge droplow"] * 3
    summary = json.loads((out / "run.json").read_text())
    assert len(rows) == summary["counts"]["dropped_total"]
