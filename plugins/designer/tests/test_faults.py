"""Model faults, through the real clients against the scripted server: a model server that
dies mid-run stops the run with one line, every row counted, and the same command resumes it
once the server is back; 429s are retried with backoff up to a bound, then one line; malformed
200 bodies are retried like 5xx; a model that does not answer at start-up is one line and exit
2."""

from __future__ import annotations

import itertools
import json
import re
import socket
import threading
import time

import pandas as pd
import pytest
from bashgym_testing.server import Fault, default_reply

PLUGIN = """
from pydantic import BaseModel
import data_designer.config as dd
from bashgym import hookimpl
from bashgym_designer.models import model_config
from bashgym.contracts import Pipeline


class Answer(BaseModel):
    answer: str


class Echo(Pipeline):
    runner = "datadesigner"

    def build(self, options, run, seed):
        default = model_config(run.models.resolve("default"))
        builder = dd.DataDesignerConfigBuilder(model_configs=[default])
        builder.add_column(dd.LLMStructuredColumnConfig(
            name="s", prompt="Answer {{ item }}", model_alias="default", output_format=Answer))
        return builder


@hookimpl
def register_pipelines(register):
    register("echo", Echo())
"""


@pytest.fixture
def echo(bashgym_cli, scripted_models, tmp_path):
    plugin = tmp_path / "echo.py"
    plugin.write_text(PLUGIN)

    def run(*extra: str, items: int = 6):
        source = tmp_path / f"items-{items}.csv"
        if not source.exists():  # rewritten, it would be other inputs: no resume
            pd.DataFrame({"item": [f"item {i}" for i in range(items)]}).to_csv(source, index=False)
        out = tmp_path / "run"
        result = bashgym_cli(
            "run", "--plugin", str(plugin), "-s", "files", "--set", f"source.path={source}",
            "-p", "echo", "-k", "parquet", "--out", str(out), *extra,
        )  # fmt: skip
        summary = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return result, summary

    return run


def _preflight(request) -> bool:
    return request.last_user_text == "Reply with OK."


def _error_line(output: str) -> str:
    assert "Traceback" not in output, output
    (line,) = [ln for ln in output.splitlines() if ln.startswith("error:")]
    return line


def _first(n: int, fault, then=default_reply):
    """A rule's reply: `fault` for the first `n` requests it answers, then `then`."""
    seen = itertools.count(1)
    return lambda request: fault if next(seen) <= n else then(request)


@pytest.mark.slow
def test_a_server_that_dies_mid_run_stops_it_and_the_rerun_resumes(
    echo, scripted_models, monkeypatch
):
    """(a) The server dies after 15 answers: one line, exit 2, run.json counts every row
    (requested = the finished batch's rows + dropped + pending; none generated: the round never
    reached the pipeline's finalize); back up, the same command resumes from the finished batch
    and ends with each of the 40 rows exactly once."""
    for name, value in (("BUFFER_SIZE", "10"), ("MAX_CONCURRENT_ROW_GROUPS", "1"),
                        ("RATE_LIMIT_GIVE_UP_S", "2")):  # fmt: skip
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    server = scripted_models.server
    answered, dead = itertools.count(1), threading.Event()

    def dies_at_15(request):
        if dead.is_set():  # a connection still open as it goes down: closed unanswered
            return Fault.disconnect()
        if next(answered) == 15:
            dead.set()
            threading.Thread(target=server.stop).start()
        return default_reply(request)

    server.add_rule(lambda r: not _preflight(r), dies_at_15)
    try:
        result, summary = echo(items=40)
    finally:
        server.stop()
        server.start()  # the same port: bashgym.toml points there
    assert result.exit_code == 1  # RunStopped: resumable
    line = _error_line(result.output)
    assert "'scripted-default' (alias 'default') stopped answering: connection refused" in line
    assert "run the same command again to resume" in line
    counts = summary["counts"]
    assert summary["status"] == "failed" and counts["requested"] == 40
    assert counts["stopped_round_rows"] == 10  # batch 0; batch 1 was in flight and is discarded
    assert "generated" not in counts  # rows after finalize: the round never reached it
    assert counts["stopped_round_rows"] + counts["dropped_total"] + counts["pending"] == 40
    assert f"{counts['pending']} of 40 rows pending" in line
    assert summary["usage_by_alias"]["default"]["failed_requests"] > 0

    server.reset()
    result, summary = echo(items=40)
    assert result.exit_code == 0, result.output
    assert summary["attempt"] == 2 and summary["status"] == "ok"
    assert summary["rounds"][0]["resumed_rows"] == 10
    assert summary["counts"]["kept"] == 40 and summary["counts"]["dropped"] == {}
    rows = pd.read_parquet(summary["outputs"]["parquet"][0])
    assert sorted(rows["item"]) == sorted(f"item {i}" for i in range(40))  # none lost, no dups
    assert rows["s"].map(lambda s: s["answer"]).notna().all()
    asked = [re.search(r"Answer (item \d+)", r.last_user_text) for r in server.completions]
    asked_items = sorted(m.group(1) for m in asked if m)
    # only the pending rows were asked for again, each once
    assert asked_items == sorted(f"item {i}" for i in range(10, 40))


def test_429_forever_is_retried_up_to_the_bound_then_one_line(echo, scripted_models, monkeypatch):
    """(b) Every generation request answers 429: each is retried with backoff until none has
    been answered for rate_limit_give_up_s, then the run stops with one line, its rows
    pending (not dropped: the quota may come back, and the same command resumes)."""
    monkeypatch.setenv("BASHGYM_DESIGNER__RATE_LIMIT_GIVE_UP_S", "1")
    server = scripted_models.server
    server.add_rule(lambda r: not _preflight(r), Fault.status(429))
    result, summary = echo()
    assert result.exit_code == 1
    line = _error_line(result.output)
    assert "stopped answering: rate limited (429), no request answered for 1s" in line
    assert "6 of 6 rows pending" in line
    counts = summary["counts"]
    assert counts["requested"] == 6 and counts["pending"] == 6 and counts["dropped"] == {}
    assert counts["stopped_round_rows"] == 0 and "generated" not in counts  # none finished
    limited = [r for r in server.completions if not _preflight(r)]
    assert len(limited) > 6  # retried, not one try per row
    assert summary["usage_by_alias"]["default"]["failed_requests"] >= len(limited)


def test_429_a_few_times_then_answers_is_a_normal_run(echo, scripted_models):
    """(c) Three 429s at start-up and three during generation: retried, nothing lost."""
    server = scripted_models.server
    server.add_rule(_preflight, _first(3, Fault.status(429)))
    server.add_rule(lambda r: True, _first(3, Fault.status(429)))
    result, summary = echo()
    assert result.exit_code == 0, result.output
    assert summary["counts"]["kept"] == 6 and summary["counts"]["dropped"] == {}
    assert summary["usage_by_alias"]["default"]["failed_requests"] >= 6
    assert len(server.completions) >= 4 + 3 + 6


def test_malformed_200_bodies_are_retried_like_5xx(echo, scripted_models):
    calls = {"n": 0}

    def one_in_three(request):
        calls["n"] += 1
        return Fault.malformed() if calls["n"] % 3 == 0 else default_reply(request)

    scripted_models.server.add_rule(lambda r: not _preflight(r), one_in_three)
    result, summary = echo()
    assert result.exit_code == 0, result.output
    assert summary["counts"]["kept"] == 6 and summary["counts"]["dropped"] == {}
    assert calls["n"] > 6  # some answers came only on a retry


def test_a_model_that_does_not_answer_at_start_is_one_line(
    echo, scripted_models, bashgym_env, monkeypatch
):
    """429 at start-up is tried again up to the bound; connection refused is said at once."""
    monkeypatch.setenv("BASHGYM_DESIGNER__RATE_LIMIT_GIVE_UP_S", "1")
    scripted_models.server.add_rule(_preflight, Fault.status(429))
    result, summary = echo()
    assert result.exit_code == 2
    line = _error_line(result.output)
    assert line.startswith("error: model alias 'default' does not answer: HTTP 429")
    tries = len(scripted_models.server.completions)
    assert tries > 1 and f"({tries} tries over 1s; designer.rate_limit_give_up_s)" in line
    assert summary["status"] == "failed"
    assert summary["counts"]["requested"] == summary["counts"]["pending"] == 6
    assert summary["usage_by_alias"]["default"]["failed_requests"] == tries

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    toml = bashgym_env.workdir / "bashgym.toml"
    toml.write_text(toml.read_text().replace(scripted_models.server.openai_base_url,
                                             f"http://127.0.0.1:{port}/v1"))  # fmt: skip
    result, _ = echo("--fresh")
    assert result.exit_code == 2
    line = _error_line(result.output)
    assert "does not answer: connection refused at http://127.0.0.1" in line
    assert "tries" not in line  # nothing listens there: no point waiting


def test_the_breaker_trips_once_only_after_a_streak_with_no_answer():
    """What ends the retries: no answer for give_up_s (here 0: the first failure; or an hour:
    never in a test). An answer ends a streak; refused requests are taken off the failed
    count DataDesigner keeps, retried tries added to it."""
    from bashgym_designer.designer import with_retries
    from bashgym_designer.faults import MAX_BACKOFF_S, Breaker

    patient = Breaker(3600)
    patient.failed("rate_limit", "m", "default")
    patient.answered()
    patient.failed("rate_limit", "m", "default")
    assert not patient.tripped and not patient.refuse("m")
    first = time.monotonic()
    assert 0 < patient.delay(1, first, None) <= MAX_BACKOFF_S
    assert patient.delay(1, first, retry_after=2.5) == 2.5  # the server's Retry-After wins
    assert patient.delay(1, first - 3600, None) is None  # this request had its time: handed back

    trips = []
    breaker = Breaker(0, on_trip=lambda: trips.append(1))
    breaker.failed("api_connection", "m", "default--s")
    breaker.failed("api_connection", "m", "default--s")
    assert breaker.tripped and trips == [1]  # cancelled once, however many fail after
    assert breaker.delay(1, time.monotonic(), None) is None
    assert breaker.refuse("m") and breaker.refuse("m")
    breaker.count_retry("m")
    assert breaker.reason() == (
        "model 'm' (alias 'default') stopped answering: connection refused or lost, no request "
        "answered for 0s (designer.rate_limit_give_up_s)"
    )
    # DataDesigner counted 5 failures for alias default--s: 2 were refusals, 1 retry it never saw
    assert with_retries({"default--s": ("m", 5)}, breaker.failed_requests()) == {
        "default--s": ("m", 4)
    }
