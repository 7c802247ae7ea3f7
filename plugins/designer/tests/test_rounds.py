"""The pipeline step: every requested row accounted for, top-up rounds, resume after a kill."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from bashgym_designer.designer import failure_reason, task_failures
from bashgym_testing.server import Reply
from bashgym_work_rounds import next_round_size

# A pipeline plugin file, loaded with --plugin: the shared Echo (one structured column per seed
# row) and a judge of its own.
PIPELINE_PLUGIN = '''
from bashgym import hookimpl
from bashgym.contracts import Judge
from bashgym_testing.plugins import Echo  # one structured answer per seed row's `item`


class OddOnly(Judge):
    """Keeps rows whose item number is odd."""

    def verdicts(self, dataset, options, run):
        import pandas as pd

        odd = [int(str(item).split()[-1]) % 2 == 1 for item in dataset["item"]]
        return pd.Series([None if o else "even item" for o in odd], index=dataset.index)


@hookimpl
def register_pipelines(register):
    register("echo", Echo())


@hookimpl
def register_judges(register):
    register("odd-only", OddOnly())
'''


@pytest.fixture
def echo_run(bashgym_env, scripted_models, tmp_path):
    plugin = tmp_path / "echo_plugin.py"
    plugin.write_text(PIPELINE_PLUGIN)
    items = tmp_path / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(40)]}).to_csv(items, index=False)
    base = ["--plugin", str(plugin), "-s", "files", "--set", f"source.path={items}", "-p", "echo"]
    return [*base, "-k", "parquet"]


def _run_json(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def test_unparseable_answers_are_counted_by_column_and_reason(
    bashgym_cli, echo_run, scripted_models, tmp_path
):
    scripted_models.server.add_rule(r"item (3|5)\b", Reply("no json here"))
    out = tmp_path / "run"
    result = bashgym_cli("run", *echo_run, "-n", "8", "--out", str(out))
    assert result.exit_code == 0, result.output
    summary = _run_json(out)
    counts = summary["counts"]
    assert counts["requested"] == 8 and counts["kept"] == 6
    reason = "pipeline column s: unparseable answer (no JSON found)"
    assert counts["dropped"] == {reason: 2}
    assert summary["usage"]["input_tokens"] > 0
    (model,) = summary["usage_by_model"]
    assert summary["usage_by_model"][model]["requests"] >= 8
    assert (out / "report.html").is_file()


def test_top_up_generates_until_enough_rows_pass(bashgym_cli, echo_run, tmp_path):
    out = tmp_path / "run"
    args = ("run", *echo_run, "-j", "odd-only", "-n", "10", "--top-up", "--out", str(out))
    result = bashgym_cli(*args)
    assert result.exit_code == 0, result.output
    summary = _run_json(out)
    assert summary["counts"]["kept"] == 10
    assert len(summary["rounds"]) >= 2
    assert summary["counts"]["dropped"]["judge odd-only: even item"] >= 5
    rows = pd.read_parquet(out / "data.parquet")
    assert len(rows) == 10 and rows["item"].is_unique  # later rounds continue through the seed
    # without --top-up the same run keeps what passes in one round
    again = bashgym_cli(*args[:-3], "--out", str(tmp_path / "once"))
    assert again.exit_code == 0
    assert _run_json(tmp_path / "once")["counts"]["kept"] == 5


def test_a_killed_run_resumes_without_duplicates_or_losses(
    bashgym_cli, echo_run, scripted_models, tmp_path
):
    scripted_models.server.latency = 0.05
    out = tmp_path / "run"
    args = [*echo_run, "-n", "40", "--out", str(out)]
    env = {**bashgym_cli.env.env(), "BASHGYM_DESIGNER__BUFFER_SIZE": "10"}
    exe = str(Path(sys.executable).with_name("bashgym"))
    proc = subprocess.Popen(
        [exe, "run", *args],
        cwd=bashgym_cli.env.workdir,
        env={**__import__("os").environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    batches = out / "datadesigner" / "dataset" / "parquet-files"
    deadline = time.monotonic() + 120
    metadata = batches.parent / "metadata.json"  # a batch counts once the metadata names it
    while not (list(batches.glob("*.parquet")) and metadata.is_file()):
        assert time.monotonic() < deadline, "the first run never finished a batch"
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _run_json(out)["status"] == "running"  # killed: nothing got to say otherwise
    before = len(scripted_models.server.completions)
    kept_batches = len(list(batches.glob("*.parquet")))
    assert 1 <= kept_batches < 4

    result = bashgym_cli.subprocess("run", *args, env=env)
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output
    summary = _run_json(out)
    assert summary["status"] == "ok" and summary["attempt"] == 2
    rows = pd.read_parquet(out / "data.parquet")
    assert sorted(rows["item"]) == sorted(f"item {i}" for i in range(40))  # none lost, no dups
    assert summary["counts"]["kept"] == 40
    # the finished batches were kept, not asked for again (+1: the model health check)
    resumed = summary["rounds"][0]["resumed_rows"]
    assert resumed >= 10
    assert len(scripted_models.server.completions) - before <= 40 - resumed + 1

    # a finished run is not resumed: the same command starts over in that directory
    again = bashgym_cli.subprocess("run", *args, env=env)
    assert again.exit_code == 0 and "resuming" not in again.output
    assert _run_json(out)["attempt"] == 1


def test_failure_reasons_are_short_and_countable():
    parse = (
        "  |----------\n  | Cause: The model output from 'm' could not be parsed into the "
        "requested format while running generation for column 's'. Validation detail: No "
        "parsable JSON found: expected a ```json markdown fence.\n  | Solution: retry"
    )
    assert failure_reason(parse) == "unparseable answer (no JSON found)"
    mismatch = (
        "Cause: The model output from 'm' could not be parsed ... Validation detail: Response "
        "doesn't match requested <response_schema> 3 validation errors for JudgeStructuredOutput"
    )
    assert failure_reason(mismatch) == "schema mismatch"
    assert failure_reason("Request timed out after 60 s") == "timed out"
    assert failure_reason("Error code: 429 - rate limit exceeded") == (
        "rate limited or out of quota (429)"
    )
    assert failure_reason("This model's maximum context length is 4096") == (
        "prompt too long for the model"
    )
    assert failure_reason("Unknown thing went 'x' wrong") == "Unknown thing went '…' wrong"
    long = "Cause: " + " ".join(f"word{i}" for i in range(60))
    cut = failure_reason(long)
    assert len(cut) <= 100 and cut.endswith("…")
    assert cut[:-1].split()[-1] in long.split()  # cut at a word, never inside one
    assert failure_reason(None) == "unknown error"


def test_only_cells_that_never_succeeded_count():
    class T:
        def __init__(self, column, rg, row, status, error=None):
            self.column, self.row_group, self.row_index = column, rg, row
            self.status, self.error = status, error

    traces = [
        T("a", 0, 0, "error", "Cause: boom"),
        T("a", 0, 0, "ok"),  # retried and succeeded
        T("a", 0, 1, "error", "Cause: boom"),
        T("b", 0, 1, "error", "Cause: later column"),  # same row: first column wins
        T("b", 1, 2, "error", "Cause: bad"),
    ]
    assert task_failures(traces) == {("a", "boom"): 1, ("b", "bad"): 1}


def test_top_up_rounds_are_sized_by_the_pass_rate():
    assert next_round_size(10, 5, 10) == 10  # half passed: ask for twice what is missing
    assert next_round_size(10, 9, 10) == 2
    assert next_round_size(10, 1, 100) == 90  # capped at 10x the missing rows


@pytest.mark.slow
def test_sigterm_records_the_status_and_reasons_survive_the_resume(
    bashgym_cli, echo_run, scripted_models, tmp_path
):
    """SIGTERM mid-run: one line saying how to resume, status `interrupted`, no temp files;
    the resumed run still names why the finished batches lost their rows."""
    scripted_models.server.add_rule(r"item (3|5)\b", Reply("no json here"))  # batch 0
    scripted_models.server.latency = 0.05
    out = tmp_path / "run"
    args = [*echo_run, "-n", "40", "--out", str(out)]
    env = {**bashgym_cli.env.env(), "BASHGYM_DESIGNER__BUFFER_SIZE": "10"}
    exe = str(Path(sys.executable).with_name("bashgym"))
    proc = subprocess.Popen(
        [exe, "run", *args],
        cwd=bashgym_cli.env.workdir,
        env={**__import__("os").environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    failures = out / "datadesigner" / "dataset" / "bashgym-failures"
    deadline = time.monotonic() + 120
    while not list(failures.glob("rg-*.json")):
        assert time.monotonic() < deadline, "the first run never finished a batch"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "interrupted (SIGTERM)" in stderr and "run the same command again" in stderr
    assert "Traceback" not in stderr
    assert _run_json(out)["status"] == "interrupted"
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]

    result = bashgym_cli.subprocess("run", *args, env=env)
    assert result.exit_code == 0, result.output
    summary = _run_json(out)
    assert summary["attempt"] == 2 and summary["counts"]["kept"] == 38
    assert summary["counts"]["dropped"] == {
        "pipeline column s: unparseable answer (no JSON found)": 2
    }
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert sorted(d["row"]["raw_output"][-1] for d in dropped) == ["no json here"] * 2
