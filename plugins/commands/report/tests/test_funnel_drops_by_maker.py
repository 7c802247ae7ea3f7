"""The funnel credits each drop to the stage that made it, not to the step that was running:
a streaming run (source straight to sinks) feeds its sinks inside the `source` step, and a
sink's drops there are the sink's, from rows the source did read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bashgym_commands_report import report_for


def stage_rows(page: str) -> dict[str, list[str]]:
    funnel = re.search(r"<h2>Funnel.*?</section>", page, re.DOTALL)
    assert funnel, "no Funnel section"
    table = funnel.group(0).split("<table class='stages'>")[1].split("</table>")[0]
    out = {}
    for row in re.findall(r"<tr><td><b>(.*?)</b>.*?</td>(.*?)</tr>", table, re.DOTALL):
        out[row[0]] = re.findall(r"<td class='num'>(.*?)</td>", row[1])
    return out


def test_a_streamed_sinks_drop_is_the_sinks_in_a_real_run(bashgym_cli, repo, monkeypatch):
    """Six example sessions, one ending on an API error that nemo-jsonl refuses: the source
    read 6 and dropped none; the sink was given 6, dropped 1 and wrote 5."""
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "cc1"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.path=examples/transcripts",
        "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    stages = stage_rows(page)
    assert stages["Source claude-code"] == ["6", "0 (0%)", "6"]
    assert stages["Sink nemo-jsonl"] == ["6", "1 (17%)", "5"]
    assert "not accounted for" not in page
    assert "sink nemo-jsonl 1" in page  # the Dropped tile says which stage dropped it
    assert "1 row dropped in all" in page  # (was "1 rows")


def test_a_files_run_with_two_sinks_credits_each_its_own(bashgym_cli, bashgym_env):
    """A 4-row CSV with one empty answer: nemo-jsonl drops it, parquet keeps all 4."""
    csv = bashgym_env.workdir / "qa.csv"
    csv.write_text("prompt,response\na?,1\nb?,\nc?,3\nd?,four\n")
    out = bashgym_env.workdir / "f1"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-k", "nemo-jsonl",
        "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stages = stage_rows((out / "report.html").read_text())
    assert stages["Source files"] == ["4", "0 (0%)", "4"]
    assert stages["Sink nemo-jsonl"] == ["4", "1 (25%)", "3"]
    assert stages["Sink parquet"] == ["4", "0 (0%)", "4"]


def write_run(
    run_dir: Path, drops: list[dict[str, Any]], source: str, sink: str, written: int
) -> None:
    """A streamed run's files as the engine writes them, with `drops` made inside the source
    step (a sink that did not say `by`, as run dirs written before it did)."""
    run_dir.mkdir()
    events = [
        {"type": "run_started", "run_dir": str(run_dir)},
        {"type": "step_started", "step": "source"},
        *({"type": "row_dropped", **d} for d in drops),
        {"type": "step_finished", "step": "source", "duration_s": 0.1},
        {"type": "step_started", "step": f"sink {sink}"},
        {"type": "sink_wrote", "sink": sink, "rows": written, "paths": []},
        {"type": "step_finished", "step": f"sink {sink}", "duration_s": 0.1},
    ]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    dropped = {d["reason"]: d["n"] for d in drops}
    summary = {
        "status": "ok", "run_dir": str(run_dir),
        "plugins": {"source": {"name": source}, "sink": [{"name": sink}]},
        "counts": {"source_rows": 5, "generated": 5, "kept": written, "dropped": dropped,
                   "dropped_total": sum(dropped.values())},
    }  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(summary))


def test_a_drop_that_names_no_maker_is_placed_by_the_sink_name_it_starts_with(tmp_path):
    """Older run dirs (and sinks that do not say `by`): `nemo-jsonl: ...` is the sink's; a
    source's own drop stays the source's."""
    write_run(
        tmp_path / "old",
        [{"by": "", "reason": "nemo-jsonl: rows: empty response", "n": 2},
         {"by": "", "reason": "claude-code: subagent without its session", "n": 1}],
        "claude-code", "nemo-jsonl", 3,
    )  # fmt: skip
    stages = stage_rows(report_for(tmp_path / "old").read_text())
    assert stages["Source claude-code"] == ["6", "1 (17%)", "5"]
    assert stages["Sink nemo-jsonl"] == ["5", "2 (40%)", "3"]


def test_a_source_named_as_the_sink_keeps_its_own_drops(tmp_path):
    """atif reads and writes: an `atif: ...` drop that names no maker, made while the source
    read, is the source's; the sink's say `by`."""
    write_run(
        tmp_path / "atif",
        [{"by": "", "reason": "atif: not a valid ATIF document", "n": 1},
         {"by": "sink atif", "reason": "not a convertible Trace: x", "n": 1}],
        "atif", "atif", 4,
    )  # fmt: skip
    stages = stage_rows(report_for(tmp_path / "atif").read_text())
    assert stages["Source atif"] == ["6", "1 (17%)", "5"]
    assert stages["Sink atif"] == ["5", "1 (20%)", "4"]


def test_subagent_lines_are_said_not_left_as_a_gap(bashgym_cli, repo, monkeypatch):
    """With subagents the sink writes a line more than the rows it kept: the stage says so,
    instead of "1 row more out than in"."""
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "cc4"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.path=examples/transcripts",
        "-k", "nemo-jsonl", "--set", "sink.include_subagents=true", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert stage_rows(page)["Sink nemo-jsonl"] == ["6", "1 (17%)", "6"]
    assert "1 of the lines written is a subagent&#39;s" in page
    assert "more out than in" not in page and "not accounted for" not in page
