"""Model faults during student tasks: each ends in one line naming the real cause, transient
ones are retried (every try counted), and a model that repeats itself is stopped.

All against scripted servers on 127.0.0.1 with injected faults: a 429 that never clears, a
refused connection, a server stopped mid-task, malformed 200 bodies, timeouts.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from bashgym_executors_student import Student, StudentOptions
from bashgym_testing import Fault, RecordedRequest, Reply, ScriptedModelServer, ToolUse

from bashgym.contracts import InputError
from bashgym.events import UsageCharged
from bashgym.records import Task

FAST = StudentOptions(model_retries=2, retry_wait_s=0.01)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tries(harness: Any) -> tuple[int, int]:
    """(answered requests, failed tries) the run was charged for."""
    charged = [e for e in harness.events if isinstance(e, UsageCharged)]
    return sum(e.requests for e in charged), sum(e.failed_requests for e in charged)


def test_a_429_that_never_clears_says_so_after_bounded_tries(harness: Any) -> None:
    harness.server.add_rule(lambda r: True, Fault.status(429, retry_after=0.01))
    result = harness.run(Task(id="t1", prompt="go"), options=FAST, params={})
    assert result.status == "error" and result.trace.outcome.error_kind == "model_error"
    reason = result.reason or ""
    assert reason.startswith(f"model student: HTTP 429 from {harness.server.openai_base_url}")
    assert reason.endswith("Rate limit reached. Please try again later.; gave up after 3 tries")
    assert "\n" not in reason
    assert len(harness.server.completions) == 3 and tries(harness) == (0, 3)


def test_connection_refused_names_the_endpoint(harness: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = harness.run(Task(id="t1", prompt="go"), options=FAST, endpoint=url, params={})
    assert result.status == "error"
    assert result.reason == (
        f"model student: connection refused at {url} (is the server running?); "
        "gave up after 3 tries"
    )
    assert tries(harness) == (0, 3)


def test_server_stopped_mid_task_keeps_the_trace_and_says_why(harness: Any, tmp_path: Path) -> None:
    server = ScriptedModelServer().start()
    try:
        url = server.openai_base_url

        def die(_: RecordedRequest) -> Fault:
            threading.Thread(target=server.stop).start()
            return Fault.disconnect()

        server.script(Reply(tool_calls=[ToolUse("run_command", {"command": "echo hi"})]), die)
        result = harness.run(Task(id="t1", prompt="go"), options=FAST, endpoint=url, params={})
    finally:
        server.stop()
    assert result.status == "error"
    reason = result.reason or ""
    assert reason.startswith(f"model student: connection refused at {url}"), reason
    assert reason.endswith("gave up after 3 tries")
    assert result.trace.tool_call_count == 1  # the turn before the server went is kept
    assert tries(harness) == (1, 3)


def test_a_server_that_drops_every_connection_says_so(harness: Any) -> None:
    harness.server.add_rule(lambda r: True, Fault.disconnect())
    result = harness.run(Task(id="t1", prompt="go"), options=FAST, params={})
    url = harness.server.openai_base_url
    assert result.reason == (
        f"model student: connection to {url} lost before an answer (did the server stop?); "
        "gave up after 3 tries"
    )


def test_malformed_and_timed_out_replies_are_retried_and_counted(harness: Any) -> None:
    harness.server.script(
        Fault.malformed(),
        Reply(tool_calls=[ToolUse("write_file", {"path": "a.txt", "content": "a"})]),
        Fault.timeout(3),
        Reply("done"),
    )
    result = harness.run(Task(id="t1", prompt="go"), options=FAST, params={"timeout": 0.5})
    assert result.status == "success", result.reason
    assert (harness.workspace / "a.txt").read_text() == "a"
    assert tries(harness) == (2, 2)  # two answers, one malformed and one timed-out try


@pytest.mark.parametrize("code", [400, 401, 404])
def test_permanent_errors_are_not_retried(harness: Any, code: int) -> None:
    harness.server.add_rule(lambda r: True, Fault.status(code))
    result = harness.run(Task(id="t1", prompt="go"), options=FAST, params={})
    assert result.status == "error" and str(code) in (result.reason or "")
    assert "tries" not in (result.reason or "")
    assert len(harness.server.completions) == 1 and tries(harness) == (0, 1)


def test_alias_max_retries_bounds_the_tries(harness: Any) -> None:
    harness.server.add_rule(lambda r: True, Fault.status(503))
    options = StudentOptions(retry_wait_s=0.01)
    result = harness.run(Task(id="t1", prompt="go"), options=options, params={"max_retries": 1})
    assert (result.reason or "").endswith("gave up after 2 tries")
    assert len(harness.server.completions) == 2


# -- a model repeating itself --------------------------------------------------------------


def test_the_same_tool_call_turn_after_turn_is_stopped(harness: Any) -> None:
    harness.server.add_rule(lambda r: True, Reply(tool_calls=[ToolUse("list_directory", {})]))
    result = harness.run(Task(id="t1", prompt="go"), options=StudentOptions(max_turns=10))
    assert result.status == "failed" and result.trace.outcome.error_kind == "repetition"
    assert result.reason == (
        "model student repeated the same tool call(s) 3 turns in a row: list_directory {}"
    )
    assert len(harness.server.completions) == 3


def test_a_reply_repeating_one_call_is_stopped_before_running_it(harness: Any) -> None:
    call = ToolUse("write_file", {"path": "x.txt", "content": "x"})
    harness.server.script(Reply(tool_calls=[call] * 5), Reply("never asked"))
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "failed" and result.trace.outcome.error_kind == "repetition"
    assert "the same tool call 5 times in one reply: write_file" in (result.reason or "")
    assert not (harness.workspace / "x.txt").exists()
    assert len(harness.server.completions) == 1


def test_a_reply_looping_on_one_phrase_is_stopped(harness: Any) -> None:
    harness.server.script(Reply("Let me check the files. " * 12, stop_reason="length"))
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "failed" and "ends repeating 'Let me check" in (result.reason or "")


def test_different_calls_and_repeated_results_are_not_a_loop(harness: Any) -> None:
    harness.server.script(
        Reply(tool_calls=[ToolUse("run_command", {"command": "true"})]),
        Reply(tool_calls=[ToolUse("run_command", {"command": "true "})]),
        Reply(tool_calls=[ToolUse("list_directory", {})]),
        Reply(tool_calls=[ToolUse("run_command", {"command": "true"})]),
        Reply("done"),
    )
    result = harness.run(Task(id="t1", prompt="go"))
    assert result.status == "success", result.reason


# -- before the first task ------------------------------------------------------------------


def test_preflight_refuses_a_model_that_does_not_answer(harness: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    ctx = harness.context(endpoint=url)
    with ctx.models, pytest.raises(InputError) as caught:
        Student().preflight(StudentOptions(), ctx.run)
    assert str(caught.value) == (
        f"model alias 'student' does not answer: connection refused at {url} "
        "(is the server running?)"
    )


def test_preflight_passes_and_counts_its_request(harness: Any) -> None:
    ctx = harness.context()
    with ctx.models:
        Student().preflight(StudentOptions(), ctx.run)
    assert len(harness.server.completions) == 1 and tries(harness) == (1, 0)


# -- a whole run: malformed replies and a dead model ---------------------------------------


def student_run(cli: Any, workdir: Path, endpoint: str, prompts: list[str], *extra: str) -> Any:
    (workdir / "bashgym.toml").write_text(
        "[models.student]\n"
        'provider = "openai-compatible"\n'
        'model = "scripted-student"\n'
        f'endpoint = "{endpoint}"\n'
    )
    (workdir / "tasks.txt").write_text("\n".join(prompts) + "\n")
    result = cli(
        "run", "-s", "prompts", "--set", "source.path=tasks.txt", "-x", "student",
        "-e", "local", "--set", "executor.retry_wait_s=0.01", "--set",
        "executor.model_retries=2", "-k", "nemo-jsonl", "-o", "out", *extra,
    )  # fmt: skip
    summary = json.loads((workdir / "out" / "run.json").read_text())
    return result, summary


def test_one_malformed_reply_in_three_loses_no_task(
    bashgym_cli: Any, bashgym_env: Any, model_server: Any
) -> None:
    served = {"n": 0, "bad": 0}
    last_bad: set[str] = set()  # tasks whose last reply was the malformed one
    lock = threading.Lock()

    def turn(request: RecordedRequest) -> Reply | Fault:
        name = request.last_user_text.split()[-1]
        with lock:
            served["n"] += 1
            # every third reply, but never twice running to one task: with four tasks
            # interleaved, one task's retries could otherwise all land on the bad ones
            if served["n"] % 3 == 0 and name not in last_bad:
                served["bad"] += 1
                last_bad.add(name)
                return Fault.malformed()
            last_bad.discard(name)
        if request.messages[-1].get("role") == "tool":
            return Reply("Done.")
        return Reply(tool_calls=[ToolUse("write_file", {"path": f"{name}.txt", "content": name})])

    model_server.add_rule(lambda r: True, turn)
    prompts = [f"write {n}" for n in ("a", "b", "c", "d")]
    result, summary = student_run(bashgym_cli, bashgym_env.workdir, model_server.openai_base_url,
                                  prompts)  # fmt: skip

    assert result.exit_code == 0, result.output
    assert summary["tasks"]["success"] == 4 and summary["counts"]["dropped_total"] == 0
    usage = summary["usage_by_alias"]["student"]
    answered = len(model_server.completions) - served["bad"]
    assert served["bad"] >= 2
    assert (usage["requests"], usage["failed_requests"]) == (answered, served["bad"])
    assert summary["usage_by_model"]["scripted-student"]["requests"] == answered


def test_a_dead_model_stops_the_run_before_any_task(bashgym_cli: Any, bashgym_env: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result, _ = student_run(bashgym_cli, bashgym_env.workdir, url, ["one", "two"])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "model alias 'student' does not answer" in lines[0], lines
    assert "connection refused" in lines[0] and "Traceback" not in result.output
    events = (bashgym_env.workdir / "out" / "events.jsonl").read_text()
    assert '"task_started"' not in events  # the preflight said it: no task started


def test_a_model_that_dies_after_the_check_fails_each_task_with_the_cause_fast(
    bashgym_cli: Any, bashgym_env: Any
) -> None:
    server = ScriptedModelServer().start()
    url = server.openai_base_url

    def die(_: RecordedRequest) -> Fault:  # the preflight is answered, then the server goes
        threading.Thread(target=server.stop).start()
        return Fault.disconnect()

    server.script(Reply("ok"), die)
    try:
        _, summary = student_run(
            bashgym_cli, bashgym_env.workdir, url, ["one", "two", "three"], "-c", "1"
        )
    finally:
        server.stop()
    refused = f"model student: connection refused at {url} (is the server running?)"
    finished = [
        json.loads(line)
        for line in (bashgym_env.workdir / "out" / "events.jsonl").read_text().splitlines()
        if '"task_finished"' in line
    ]
    reasons = [e["reason"] for e in finished]
    assert len(reasons) == 3 and all(refused in r or "connection to" in r for r in reasons)
    # the first task tried 3 times; the next ones once each, the endpoint known to be down
    assert reasons[0].endswith("gave up after 3 tries") and reasons[1] == reasons[2] == refused
    # each task's real cause is its drop reason, not a shape the sink could not use
    dropped = summary["counts"]["dropped"]
    assert sum(n for r, n in dropped.items() if "task error: model student: conn" in r) == 3, (
        dropped
    )
