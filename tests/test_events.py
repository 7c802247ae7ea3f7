"""Events: one path for every count. The log, the tally, redaction and on_event."""

from __future__ import annotations

import json

from bashgym import hookimpl
from bashgym.contracts import RunContext
from bashgym.events import (
    Counted,
    EventBus,
    Note,
    Reported,
    RowDropped,
    RowsGenerated,
    RunFinished,
    SinkWrote,
    StepFinished,
    Tally,
    TaskFinished,
    TaskStarted,
    UsageCharged,
    read_events,
)
from bashgym.records import Usage
from bashgym.settings import Settings


def test_the_tally_counts_what_the_events_say(tmp_path):
    tally = Tally()
    for event in (
        RowDropped(by="judge j", reason="too short", n=2),
        RowDropped(reason="no by"),
        UsageCharged.of(Usage(input_tokens=10, output_tokens=2), 0.5, model="m", alias="a"),
        UsageCharged.of(Usage(input_tokens=5), None, model="m2", alias="a"),
        TaskStarted(task_id="t1", executor="x"),
        TaskStarted(task_id="t2", executor="x"),
        TaskFinished(task_id="t1", status="success"),
        SinkWrote(sink="parquet", rows=7, paths=["p"]),
        SinkWrote(sink="jsonl", rows=6, paths=["q"]),
        StepFinished(step="sink parquet", duration_s=0.25),
    ):
        tally(event)
    summary = tally.summary()
    assert summary["counts"]["dropped"] == {"judge j: too short": 2, "no by": 1}
    assert summary["counts"]["kept"] == 6  # the fewest any sink wrote
    # m2 has no price: the run's cost is unknown (null), never a false $0.50; what is known
    # is said as such, and so is each model's and alias's cost
    assert summary["usage"]["input_tokens"] == 15 and summary["cost_usd"] is None
    assert summary["cost_known_usd"] == 0.5 and summary["cost_unknown_for"] == ["m2"]
    assert summary["usage_by_model"]["m"]["cost_usd"] == 0.5
    assert summary["usage_by_model"]["m2"]["input_tokens"] == 5
    assert summary["usage_by_model"]["m2"]["cost_usd"] is None
    assert summary["usage_by_alias"]["a"]["requests"] == 2
    assert summary["usage_by_alias"]["a"]["cost_usd"] is None
    assert summary["tasks"] == {"success": 1, "running": 1}
    assert summary["timings_s"] == {"sink parquet": 0.25}
    unknown = Tally()
    unknown(SinkWrote(sink="third-party", rows=None))
    assert unknown.summary()["counts"]["kept"] is None


def test_a_priced_run_says_its_cost_and_a_free_one_zero():
    tally = Tally()
    tally(UsageCharged.of(Usage(input_tokens=10), 0.25, model="m", alias="a"))
    tally(UsageCharged.of(Usage(input_tokens=10), 0.0, model="local", alias="student"))
    tally(UsageCharged.of(Usage(), None, model="down", alias="b", failed_requests=1))
    summary = tally.summary()  # a failed request with no tokens spent nothing unknown
    assert summary["cost_usd"] == 0.25 and "cost_unknown_for" not in summary
    assert summary["usage_by_model"]["local"]["cost_usd"] == 0.0  # a known $0 stays $0


def test_a_resumed_run_counts_every_attempts_tasks_once_and_a_stopped_one_none_running(
    tmp_path,
):
    """run.json's `tasks` said only the last attempt's (4 of 6 after a Ctrl-C and the same
    command again), and a stopped run said its unfinished tasks were still `running`."""
    log = tmp_path / "events.jsonl"
    first = EventBus(log)
    first.subscribe(tally := Tally())
    for event in (
        TaskStarted(task_id="t1", executor="x"),
        TaskFinished(task_id="t1", status="success"),
        TaskStarted(task_id="t2", executor="x"),
        TaskFinished(task_id="t2", status="failed"),  # retried in the next attempt
        TaskStarted(task_id="t3", executor="x"),
        RunFinished(status="interrupted"),
    ):
        first.emit(event)
    first.close()
    assert tally.summary()["tasks"] == {"success": 1, "failed": 1, "interrupted": 1, "running": 0}
    again = Tally()
    again.add_earlier(read_events(log))
    for event in (
        TaskStarted(task_id="t2", executor="x"),
        TaskFinished(task_id="t2", status="success"),
        TaskStarted(task_id="t3", executor="x"),
        TaskFinished(task_id="t3", status="success"),
    ):
        again(event)
    assert again.summary()["tasks"] == {"success": 3, "running": 0}
    retried = Tally()  # a task started again is running, not also its earlier outcome
    retried.add_earlier(read_events(log))
    retried(TaskStarted(task_id="t2", executor="x"))
    assert retried.summary()["tasks"] == {"success": 1, "running": 1}


def test_the_bus_appends_redacted_events_that_read_back(tmp_path):
    path = tmp_path / "events.jsonl"
    seen = []
    bus = EventBus(path, redact=lambda text: text.replace("sk-secret", "[REDACTED]"))
    bus.subscribe(seen.append)
    bus.emit(Note(text="key sk-secret leaked"))
    bus.emit(RowsGenerated(step="pipeline", n=3, total=9))
    bus.close()
    with path.open("a") as fh:
        fh.write('{"type": "note", "te')  # a torn last line, as after a kill
    assert "sk-secret" not in path.read_text()
    events = read_events(path)
    assert [type(e).__name__ for e in events] == ["Note", "RowsGenerated"]
    assert events[0].text == "key [REDACTED] leaked" == seen[0].text


def test_the_bus_redacts_every_text_field_not_only_free_text(tmp_path):
    """Ids, count names, paths and plugins' sections come from the data too (a file named after
    a token, an attachment type a transcript made up): none reaches events.jsonl or the tally."""
    path = tmp_path / "events.jsonl"
    seen = []
    bus = EventBus(path, redact=lambda text: text.replace("sk-secret", "[REDACTED]"))
    bus.subscribe(seen.append)
    bus.emit(RowDropped(by="judge sk-secret", reason="r", row_id="/p/sk-secret.jsonl"))
    bus.emit(Counted(what="source.attachments.sk-secret", n=2))
    bus.emit(SinkWrote(sink="parquet", rows=1, paths=["/out/sk-secret/data.parquet"]))
    bus.emit(Reported(section="mine", data={"sk-secret": [1, "sk-secret", {"k": "sk-secret"}]}))
    bus.close()
    assert "sk-secret" not in path.read_text()
    assert "sk-secret" not in repr(seen)
    assert seen[1].what == "source.attachments.[REDACTED]" and seen[1].n == 2
    assert seen[3].data == {"[REDACTED]": [1, "[REDACTED]", {"k": "[REDACTED]"}]}


class Recorder:
    def __init__(self) -> None:
        self.events = []

    @hookimpl
    def on_event(self, event, run):
        self.events.append(event)


def test_on_event_sees_every_event_a_run_logs(bashgym_cli, register_plugin, repo, monkeypatch):
    recorder = Recorder()
    register_plugin(recorder, "recorder")
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli("run", "examples/slice.toml", "--out", str(out))
    assert result.exit_code == 0, result.output
    logged = read_events(out / "events.jsonl")
    assert [e.type for e in recorder.events] == [e.type for e in logged]
    types = [e.type for e in logged]
    assert types[0] == "run_started" and "run_finished" in types
    after = types[types.index("run_finished") + 1 :]
    assert after == ["artifact"]  # report.html, written by its plugin once the run ended
    summary = json.loads((out / "run.json").read_text())
    wrote = [e for e in logged if e.type == "sink_wrote"]
    assert wrote[0].rows == summary["counts"]["kept"] == 12


def test_a_context_without_a_bus_still_counts(tmp_path):
    run = RunContext(run_dir=tmp_path, settings=Settings())
    run.count("x", 2)
    run.drop("why")
    run.note("hello")
    assert run.counts == {"x": 2} and run.dropped == {"why": 1} and run.notes == ("hello",)
