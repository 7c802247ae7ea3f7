"""report.html from a run directory as a run leaves it: the funnel by stage (events.jsonl), kept
rows from the sinks' outputs, dropped rows with their raw output, threshold lines from a saved
config (plain dicts), hostile row text escaped, and a real transcript run's own traces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import markupsafe
import pyarrow as pa
import pyarrow.parquet as pq
from bashgym_commands_report import columns_from_config, report_for

EVIL = "<script>alert('pwned')</script>"
SAVED_CONFIG = {
    "data_designer": {
        "columns": [
            {"name": "level", "column_type": "sampler", "sampler_type": "category"},
            {
                "name": "quality",
                "column_type": "llm-judge",
                "scores": [{"name": "correctness"}, {"name": "style"}],
            },
        ],
        "processors": [
            {
                "processor_type": "bashgym-filter",
                "rules": [
                    {
                        "keep": "{{ quality.correctness.score >= 3 }}",
                        "reason": "correctness below 3",
                        "threshold": {"column": "quality", "criterion": "correctness", "min": 3},
                    },
                    # a hand-written rule says no threshold: read from its condition
                    {"keep": "{{ quality.style.score >= 2 }}", "reason": "style below 2"},
                ],
            }
        ],
    }
}


def section(page: str, title: str) -> str:
    match = re.search(rf"<h2>{re.escape(title)}.*?</section>", page, re.DOTALL)
    assert match, f"no section {title!r}"
    return match.group(0)


def test_thresholds_come_from_a_saved_config_of_plain_dicts():
    columns = columns_from_config(SAVED_CONFIG)
    assert columns.thresholds == {("quality", "correctness"): 3, ("quality", "style"): 2}
    assert columns.judges == {"quality": ["correctness", "style"]}
    assert columns.samplers == ["level"]


# run.json's `routing` as bashgym-work-tasks writes it (routing_report)
ROUTING = {
    "router": "confidence",
    "teacher": "claude-cli",
    "tasks": 8,
    "executors": {
        "student": {"routed": 6, "share": 0.75, "attempts": 6, "checked": 6, "verified": 4,
                    "verified_rate": 0.6667, "cost_usd": 0.0, "cost_unknown_attempts": 0},
        "claude-cli": {"routed": 2, "share": 0.25, "attempts": 4, "checked": 4, "verified": 4,
                       "verified_rate": 1.0, "cost_usd": 0.84, "cost_unknown_attempts": 0},
    },
    "escalations": {"count": 2, "checked": 2, "verified": 2, "verified_rate": 1.0},
    "success": {"routed": 8, "checked": 8, "routed_rate": 1.0, "all_teacher_rate": 1.0,
                "retained_pct": 100.0, "basis": "estimated: claude-cli's verified rate"},
    "cost": {"routed_usd": 0.84, "all_teacher_usd": 1.68, "saved_pct": 50.0,
             "basis": "estimated: measured on the 4 task(s) claude-cli ran"},
}  # fmt: skip


def events(*items: dict) -> str:
    return "".join(json.dumps({"at": 0.0, **item}) + "\n" for item in items)


def make_run(run_dir: Path) -> None:
    """A run as the engine leaves it: 10 source items (1 dropped there), 12 rows asked of the
    pipeline (3 dropped by its filter, inside it: 9 generated), 9 rows to two sinks (nemo-jsonl
    drops 2)."""
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_text(
        events(
            {"type": "run_started", "run_dir": str(run_dir)},
            {"type": "step_started", "step": "source"},
            {"type": "row_dropped", "by": "", "reason": "files: unreadable row", "n": 1},
            {"type": "step_finished", "step": "source", "duration_s": 0.1},
            {"type": "step_started", "step": "pipeline"},
            {"type": "row_dropped", "by": "filter", "reason": "correctness below 3", "n": 3},
            {"type": "step_finished", "step": "pipeline", "duration_s": 1.0},
            {"type": "step_started", "step": "sink nemo-jsonl", "total": 9},
            {"type": "row_dropped", "by": "", "reason": "nemo-jsonl: no final answer", "n": 2},
            {"type": "sink_wrote", "sink": "nemo-jsonl", "rows": 7, "paths": []},
            {"type": "step_finished", "step": "sink nemo-jsonl", "duration_s": 0.1},
            {"type": "step_started", "step": "sink parquet", "total": 9},
            {"type": "sink_wrote", "sink": "parquet", "rows": 9, "paths": []},
            {"type": "step_finished", "step": "sink parquet", "duration_s": 0.1},
        )
    )
    out = run_dir / "nemo-jsonl"
    out.mkdir()
    line = {
        "messages": [
            {"role": "user", "content": f"Fix the parser {EVIL}"},
            {"role": "assistant", "content": "Fixed: the tokenizer skipped tabs."},
        ]
    }
    (out / "train.jsonl").write_text(json.dumps(line) + "\n")
    rows = [
        {"level": "easy", "quality": json.dumps({"correctness": {"score": 5}})},
        {"level": EVIL, "quality": json.dumps({"correctness": {"score": 4}})},
    ]
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "data.parquet")
    dropped = {
        "by": "pipeline column answer",
        "reason": "the model's answer is not valid JSON",
        "row": {"prompt": "Solve it", "raw_output": [f"not json {EVIL}"], "error": "parse error"},
    }
    (run_dir / "dropped.jsonl").write_text(json.dumps(dropped) + "\n")
    saved = run_dir / "datadesigner" / "dataset"
    saved.mkdir(parents=True)
    (saved / "builder_config.json").write_text(json.dumps(SAVED_CONFIG))
    summary = {
        "status": "ok",
        "run_dir": str(run_dir),
        "plugins": {
            "source": {"name": "files", "from": "sources-files"},
            "pipeline": {"name": "coding-agent-sft", "from": "pipelines-coding-agent"},
            "sink": [{"name": "nemo-jsonl"}, {"name": "parquet"}],
        },
        "counts": {
            "source_rows": 9,
            "requested": 12,
            "generated": 9,
            "kept": 7,
            "dropped": {
                "files: unreadable row": 1,
                "filter: correctness below 3": 3,
                "nemo-jsonl: no final answer": 2,
            },
            "dropped_total": 6,
        },
        "outputs": {
            "nemo-jsonl": [str(out / "train.jsonl"), str(out / "manifest.json")],
            "parquet": [str(run_dir / "data.parquet")],
        },
        "routing": ROUTING,
    }
    (run_dir / "run.json").write_text(json.dumps(summary))


def stage_rows(page: str) -> dict[str, list[str]]:
    table = section(page, "Funnel").split("<table class='stages'>")[1].split("</table>")[0]
    out = {}
    for row in re.findall(r"<tr><td><b>(.*?)</b>.*?</td>(.*?)</tr>", table, re.DOTALL):
        cells = re.findall(r"<td class='num'>(.*?)</td>", row[1])
        out[row[0]] = cells
    return out


def test_the_funnel_counts_each_stage_against_what_it_was_given(tmp_path):
    run_dir = tmp_path / "run"
    make_run(run_dir)
    page = report_for(run_dir).read_text()
    stages = stage_rows(page)
    assert stages == {
        "Source files": ["10", "1 (10%)", "9"],
        "Generation coding-agent-sft": ["12", "3 (25%)", "9"],
        "Sink nemo-jsonl": ["9", "2 (22%)", "7"],
        "Sink parquet": ["9", "0 (0%)", "9"],
    }
    for cells in stages.values():  # in = dropped + out, in every stage
        rows_in, dropped, rows_out = (int(c.split()[0]) for c in cells)
        assert rows_in == dropped + rows_out
    assert "1 (10%) files: unreadable row" in page and "2 (22%) nemo-jsonl: no final" in page
    assert "source 1 · generation 3 · sink nemo-jsonl 2" in page  # the Dropped tile, by stage


def test_rows_kept_and_dropped_are_shown_escaped_with_thresholds(tmp_path):
    run_dir = tmp_path / "run"
    make_run(run_dir)
    page = report_for(run_dir).read_text()
    assert "<script" not in page.lower()
    escaped = str(markupsafe.escape(EVIL))
    kept = section(page, "Sample of kept rows")
    assert f"Fix the parser {escaped}" in kept and "the tokenizer skipped tabs" in kept
    assert "train.jsonl" in kept
    dropped = section(page, "Examples of dropped rows")
    assert (
        f"not json {escaped}" in dropped and "the model&#39;s answer is not valid JSON" in dropped
    )
    assert dropped.index("raw_output") < dropped.index("prompt")  # the raw answer comes first
    judges = section(page, "Judge scores")  # charted from the parquet output, line from config
    assert "kept ≥ 3" in judges and "<title>5: 1 kept</title>" in judges
    assert escaped in section(page, "Sampler distributions")
    routing = section(page, "Routing")
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", routing))
    assert facts["Escalations"] == "2" and facts["Saved"] == "50.0%"
    assert facts["Verified success"] == "8 of 8 (100%)" and facts["Teacher"] == "claude-cli"
    assert facts["Retained vs all-teacher"] == "100.0%" and facts["Cost"] == "$0.8400"
    assert "<td>student</td><td class='num'>6</td><td class='num'>75%</td>" in routing
    assert "4 of 6 (67%)" in routing and "measured on the 4 task(s)" in routing


def test_charts_say_where_their_rows_come_from(tmp_path):
    run_dir = tmp_path / "run"
    make_run(run_dir)
    page = report_for(run_dir).read_text()
    assert "Kept rows as parquet: data.parquet holds them" in section(page, "Judge scores")
    # no output with the charted columns: DataDesigner's batches, and what they cannot tell
    summary = json.loads((run_dir / "run.json").read_text())
    del summary["outputs"]["parquet"]
    (run_dir / "run.json").write_text(json.dumps(summary))
    batches = run_dir / "datadesigner" / "dataset" / "parquet-files"
    batches.mkdir()
    (run_dir / "data.parquet").rename(batches / "batch_00000.parquet")
    judges = section(report_for(run_dir).read_text(), "Judge scores")
    assert "Kept rows as DataDesigner&#39;s batches holds them" in judges
    assert "2 rows the sinks dropped after generation count as kept here" in judges
    assert "<title>5: 1 kept</title>" in judges


def test_an_orchestrator_job_shows_its_result_without_its_free_text(tmp_path):
    run_dir = tmp_path / "run"
    make_run(run_dir)
    job = {
        "job": "add-search", "status": "done", "integration_branch": "bashgym/add-search",
        "integration_commit": "0123456789abcdef", "counts": {"merged": 2, "failed": 1},
        "tasks": {
            "t1": {"state": "merged", "attempts": 1, "cost_usd": 0.2, "duration_s": 30.0},
            "t2": {"state": "failed", "attempts": 2, "cost_usd": 0.1, "duration_s": 75.0,
                   "reason": f"crashed {EVIL}", "branch": "bashgym/add-search/t2"},
        },
        "verify": {"command": "pytest -q", "ok": True, "exit_code": 0,
                   "output": "SECRET_TOKEN=abc passed"},
        "cost_usd": 0.3, "budget_usd": None, "wall_s": 95.0, "critical_path_s": 80.0,
    }  # fmt: skip
    (run_dir / "job.json").write_text(json.dumps(job))
    page = report_for(run_dir).read_text()
    orchestrated = section(page, "Orchestrator job")
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", orchestrated))
    assert facts["Merged"] == "2" and facts["Failed"] == "1" and facts["Verify"] == "passed"
    assert facts["Commit"] == "0123456789ab" and facts["Wall time"] == "1 min 35 s"
    assert "bashgym/add-search/t2" in orchestrated and "pytest -q" in orchestrated
    assert "SECRET_TOKEN" not in page and "crashed" not in page  # job.json's unscrubbed text


def test_a_transcript_run_reports_its_traces_outcomes_tokens_and_cost(
    bashgym_cli, repo, monkeypatch
):
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.path=examples/transcripts",
        "-k", "nemo-jsonl", "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pylist()
    success = sum(r["success"] is True for r in table)
    failed = sum(r["success"] is False for r in table)
    tokens = sum(r["output_tokens"] or 0 for r in table)
    assert failed >= 1  # the examples hold a session that ended on an API error
    runs = section((out / "report.html").read_text(), "Agent runs")
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", runs))
    assert facts["Traces"] == f"{len(table):,}"
    assert facts["Succeeded"] == f"{success:,}" and facts["Failed"] == f"{failed:,}"
    assert facts["Output tokens"] == f"{tokens:,}" and facts["Cost"].startswith("$")
    kept = section((out / "report.html").read_text(), "Sample of kept rows")
    assert "train.jsonl" in kept and "<b>user</b>" in kept


def test_headless_chromium_shows_the_rows_as_text(tmp_path):
    """Chromium prints the page to PDF; its text holds the kept and dropped rows, the hostile
    row as visible text (escaped, never run), and the stage table."""
    import os
    import shutil
    import subprocess

    import pytest

    chromium = Path("/usr/bin/chromium")
    if not chromium.is_file() or not shutil.which(str(chromium)):
        pytest.skip("needs /usr/bin/chromium (Debian package chromium; .ci/run installs it)")
    from pypdf import PdfReader

    run_dir = tmp_path / "run"
    make_run(run_dir)
    page = report_for(run_dir)
    pdf, home = tmp_path / "page.pdf", tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [str(chromium), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--no-pdf-header-footer",
         f"--print-to-pdf={pdf}", page.as_uri()],
        capture_output=True, text=True, timeout=90,
        env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home),
             "XDG_CACHE_HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 0 and pdf.is_file(), proc.stderr[-2000:]
    import unicodedata

    pages = " ".join(p.extract_text() for p in PdfReader(pdf).pages)
    text = " ".join(unicodedata.normalize("NFKC", pages).split())  # "ﬁ" ligatures as "fi"
    assert "Sample of kept rows" in text and "the tokenizer skipped tabs" in text
    assert "Fix the parser <script>alert('pwned')</script>" in text  # shown, not run
    assert "not json <script>alert('pwned')</script>" in text  # a dropped row's raw output
    assert "Sink nemo-jsonl" in text and "nemo-jsonl: no final answer" in text


def test_a_top_up_stage_accounts_for_every_row_asked():
    """Two rounds ask 16 rows for 12 wanted: 3 dropped by the pipeline's filter, 13 generated,
    1 passed beyond the 12 (left out), 12 to the sink; a stage whose numbers do not add up says
    by how much."""
    from collections import Counter

    from bashgym_commands_report import ReportColumns, render_report
    from bashgym_commands_report.rundir import StepDrops

    steps = StepDrops(
        by_step={"pipeline": Counter({"filter: too short": 3})},
        sink_in={"parquet": 12}, written={"parquet": 11}, steps=["pipeline", "sink parquet"],
    )  # fmt: skip
    summary = {
        "plugins": {"pipeline": {"name": "samplers"}, "sink": [{"name": "parquet"}]},
        "counts": {"requested": 12, "generated": 13, "top_up_surplus": 1, "kept": 11,
                   "dropped": {"filter: too short": 3}, "dropped_total": 3},
        "rounds": [{"requested": 12, "generated": 9, "kept": 9},
                   {"requested": 4, "generated": 4, "kept": 4}],
    }  # fmt: skip
    page = render_report(summary, kept=None, dropped=[], columns=ReportColumns([], {}), steps=steps)
    stages = stage_rows(page)
    assert stages["Generation samplers"] == ["16", "3 (19%)", "13"]
    assert "16 rows asked for in 2 rounds, and the rows it produced" in page
    assert stages["Top-up"] == ["13", "0 (0%)", "12"]
    assert "1 passed beyond the 12 wanted and were left out" in page
    assert stages["Sink parquet"] == ["12", "0 (0%)", "11"]
    assert "1 row not accounted for" in page and "the stage&#39;s note says" in page


def test_a_cost_with_an_unpriced_model_is_not_shown_as_zero(tmp_path):
    """run.json's cost_usd counts only priced models: with one unpriced (a local model, the
    scripted server) the page says the cost is unknown, never "$0", which would read as free."""
    run_dir = tmp_path / "run"
    make_run(run_dir)
    summary = json.loads((run_dir / "run.json").read_text())
    summary.update(
        cost_usd=0.0,
        cost_unknown_for=["scripted"],
        usage={"input_tokens": 120, "output_tokens": 30},
        usage_by_model={
            "scripted": {"requests": 3, "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0}
        },
    )
    (run_dir / "run.json").write_text(json.dumps(summary))
    page = report_for(run_dir).read_text()
    tiles = dict(re.findall(r"<div class='k'>(.*?)</div><div class='v'>(.*?)</div>", page))
    usage = section(page, "Token usage and cost")
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", usage))
    assert tiles["Cost"] == facts["Cost"] == "unknown (no price for scripted)"
    assert "$0<" not in usage and "per kept row" not in page
    assert "<td class='num'>unknown</td>" in usage  # the model's own row
    summary.update(cost_usd=0.42, usage_by_model={"gpt": {"requests": 1, "cost_usd": 0.42}})
    (run_dir / "run.json").write_text(json.dumps(summary))
    usage = section(report_for(run_dir).read_text(), "Token usage and cost")
    assert "$0.4200 + unknown (no price for scripted)" in usage  # what is known, and that more
