"""The stage table measures each stage against what it was given: a pipeline's generation from
the rows asked of it to the rows it produced (run.json's `generated`, after its finalize), the
judges' verdicts on those, then each sink. A pipeline whose finalize makes several rows of one
says so in words, never as "rows more out than in"; a run its model stopped says where the rows
it asked for are.

Real runs through the CLI, DataDesigner and the engine; the report is the one the run wrote."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
from bashgym_testing.plugins import DropLow, EchoPlugin, TriplePlugin, run_echo_top_up, run_triple

# the code-graph tests' sample repository: 7 files, 27 graph nodes
SAMPLE = Path(__file__).parents[3] / "pipelines/code-graph/tests/fixtures/sample_repo"


def stage_rows(page: str) -> dict[str, tuple[list[str], str]]:
    """Each stage's label: its In, Dropped and Out cells, and its note."""
    funnel = re.search(r"<h2>Funnel.*?</section>", page, re.DOTALL)
    assert funnel, "no Funnel section"
    table = funnel.group(0).split("<table class='stages'>")[1].split("</table>")[0]
    out = {}
    for label, note, cells in re.findall(
        r"<tr><td><b>(.*?)</b><div class='muted'>(.*?)</div></td>(.*?)</tr>", table, re.DOTALL
    ):
        out[label] = (re.findall(r"<td class='num'>(.*?)</td>", cells), note)
    return out


def git_repo(target: Path) -> Path:
    shutil.copytree(SAMPLE, target)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "HOME": str(target), "PATH": "/usr/bin:/bin:/usr/local/bin"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "sample"]):
        subprocess.run(["git", *args], cwd=target, env=env, check=True, capture_output=True)
    return target


def test_a_pipeline_that_makes_more_rows_than_asked_says_so(bashgym_cli, tmp_path):
    """code-graph-pairs without -n on the sample repository: 27 rows asked (one per graph
    node), 59 triplets produced. Before: "Generation: 27 in, 59 out; 32 rows more out than in,
    less the drops", as if rows had appeared from nowhere."""
    repo = git_repo(tmp_path / "sample")
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "code-repo", "--set", f"source.path={repo}", "-p", "code-graph-pairs",
        "--set", "pipeline.qa=false", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert (counts["requested"], counts["generated"], counts["kept"]) == (27, 59, 59)
    page = (out / "report.html").read_text()
    stages = stage_rows(page)
    assert list(stages) == ["Source code-repo", "Generation code-graph-pairs", "Sink parquet"]
    cells, note = stages["Generation code-graph-pairs"]
    assert cells == ["27", "0 (0%)", "59"]
    assert note == (
        "rows asked of the pipeline, and the rows it produced (after its finalize); "
        "32 rows more than asked: its finalize made several rows of one"
    )
    assert stages["Sink parquet"][0] == ["59", "0 (0%)", "59"]
    assert "more out than in" not in page and "not accounted for" not in page
    assert "the stage&#39;s note says where they differ" not in page  # no stage has a gap


def test_generation_judges_and_sinks_are_each_their_own_stage(
    bashgym_cli, bashgym_env, register_plugin
):
    """4 tasks asked; finalize drops b's and makes 3 rows of each other (9 produced); the
    judge drops the third parts (6 left); parquet writes 6, picky refuses c's 2. Before, the
    judge's drops were the generation's: "4 in, 4 dropped, 6 out; 6 rows more out than in"."""
    register_plugin(TriplePlugin(), "triple-plugin")
    result, out = run_triple(bashgym_cli, bashgym_env)
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert (counts["requested"], counts["generated"]) == (4, 9)
    page = (out / "report.html").read_text()
    stages = stage_rows(page)
    assert list(stages) == [
        "Source files", "Generation triple", "Judges", "Sink parquet", "Sink picky"
    ]  # fmt: skip
    cells, note = stages["Generation triple"]
    assert cells == ["4", "1 (25%)", "9"]
    assert note.endswith("; 6 rows more than asked, less its drops: its finalize made several "
                         "rows of one")  # fmt: skip
    assert stages["Judges"] == (
        ["9", "3 (33%)", "6"], "the rows the pipeline produced, judged"
    )  # fmt: skip
    assert stages["Sink parquet"][0] == ["6", "0 (0%)", "6"]
    assert stages["Sink picky"][0] == ["6", "2 (33%)", "4"]
    assert "more out than in" not in page and "not accounted for" not in page
    # the reasons sit on the stage that dropped them
    table = page.split("<table class='stages'>")[1].split("</table>")[0]
    rows = {r.split("</b>")[0]: r for r in table.split("<tr><td><b>")[1:]}
    assert "1 (25%) pipeline triple: finalize: b has no parts" in rows["Generation triple"]
    assert "3 (33%) judge no-third: a third part" in rows["Judges"]
    assert "2 (33%) sink picky: c is refused" in rows["Sink picky"]
    assert "generation 1 · judges 3 · sink picky 2" in page  # the Dropped tile, by stage


def test_a_run_its_model_stopped_says_where_the_rows_are(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
):
    """Six rows asked in batches of two; the model answers items 0 and 1, then only 429s: the
    run stops with the first batch made (2 rows, on disk for the resume) and 4 pending. None was
    generated (the round never reached finalize), and the stage says so instead of a gap."""
    from bashgym_testing.server import Fault, default_reply

    for name, value in (("BUFFER_SIZE", "2"), ("MAX_CONCURRENT_ROW_GROUPS", "1"),
                        ("RATE_LIMIT_GIVE_UP_S", "1")):  # fmt: skip
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    register_plugin(EchoPlugin(), "echo-plugin")
    scripted_models.server.add_rule(
        lambda r: (
            r.last_user_text == "Reply with OK." or re.search(r"item [01]\b", r.last_user_text)
        ),
        default_reply,
    )
    scripted_models.server.add_rule(lambda r: True, Fault.status(429))
    seed = bashgym_env.workdir / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(6)]}).to_csv(seed, index=False)
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-p", "echo", "-k", "parquet",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert (counts["requested"], counts["stopped_round_rows"], counts["pending"]) == (6, 2, 4)
    assert "generated" not in counts
    stages = stage_rows((out / "report.html").read_text())
    cells, note = stages["Generation echo"]
    assert cells == ["6", "0 (0%)", "—"]
    assert note.endswith("; the run stopped here with 2 rows made in finished batches and 4 "
                         "pending (the same command resumes)")  # fmt: skip


def test_code_graph_n_above_its_yield_says_which_rows_gave_no_triplet(bashgym_cli, tmp_path):
    """-n 500 on a repository of 27 graph nodes: 59 triplets, 441 fewer than asked (the
    pipeline counts them as `fewer_than_asked`, a note says why); with --top-up -n 100 the
    top-up stops after round 1 (41 fewer than asked: another round cannot make more). Before:
    "441 rows not accounted for" (and 41)."""
    repo = git_repo(tmp_path / "sample")
    for extra, asked, fewer in ((["-n", "500"], "500", 441),
                                (["-n", "100", "--top-up"], "100", 41)):  # fmt: skip
        out = tmp_path / f"run-{asked}"
        result = bashgym_cli(
            "run", "-s", "code-repo", "--set", f"source.path={repo}", "-p", "code-graph-pairs",
            "--set", "pipeline.qa=false", *extra, "-k", "parquet", "--out", out,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        counts = json.loads((out / "run.json").read_text())["counts"]
        assert (counts["generated"], counts["fewer_than_asked"]) == (59, fewer)
        page = (out / "report.html").read_text()
        stages = stage_rows(page)
        assert list(stages) == ["Source code-repo", "Generation code-graph-pairs", "Sink parquet"]
        cells, note = stages["Generation code-graph-pairs"]
        assert cells == [asked, "0 (0%)", "59"]
        assert note.endswith(f"; {fewer} rows fewer than asked: the pipeline had no more to make "
                             "(its note says why)")  # fmt: skip
        assert "not accounted for" not in page and "more than asked" not in page


def test_a_top_up_stopped_in_its_second_round_counts_both_rounds_asks(
    bashgym_cli, bashgym_env, register_plugin, scripted_models, monkeypatch
):
    """Six items in batches of two, a judge dropping items 0-2, --top-up; the model answers 8
    requests, then only 429s. Round 1 makes 6 (3 kept); round 2 asks 6 and stops with 2 made
    and 4 pending. Before: "Generation echo: 6 in, 6 out; 6 rows more than asked: its finalize
    made several rows of one" (echo has no finalize; round 2's rows were left out of In)."""
    from bashgym_testing.server import Fault, default_reply

    for name, value in (("BUFFER_SIZE", "2"), ("MAX_CONCURRENT_ROW_GROUPS", "1"),
                        ("RATE_LIMIT_GIVE_UP_S", "1")):  # fmt: skip
        monkeypatch.setenv(f"BASHGYM_DESIGNER__{name}", value)
    register_plugin(EchoPlugin(judge=DropLow()), "echo-plugin")
    answered = []

    def answers(request):  # the start-up check, then 8 answers
        if request.last_user_text == "Reply with OK.":
            return True
        answered.append(1)
        return len(answered) <= 8

    scripted_models.server.add_rule(answers, default_reply)
    scripted_models.server.add_rule(lambda r: True, Fault.status(429))
    result, out = run_echo_top_up(bashgym_cli, bashgym_env)
    assert result.exit_code == 1, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert (counts["requested"], counts["requested_in_rounds"], counts["rounds"]) == (6, 12, 2)
    page = (out / "report.html").read_text()
    stages = stage_rows(page)
    cells, note = stages["Generation echo"]
    assert cells == ["12", "0 (0%)", "6"]
    assert note == (
        "12 rows asked for in 2 rounds, and the rows it produced (after its finalize); the run "
        "stopped here with 2 rows made in finished batches and 4 pending (the same command "
        "resumes)"
    )
    assert stages["Judges"] == (["6", "3 (50%)", "—"], "the rows the pipeline produced, judged")
    assert "more than asked" not in page and "not accounted for" not in page


def test_a_top_up_surplus_without_a_judge_is_not_said_to_be_judged(
    bashgym_cli, bashgym_env, register_plugin
):
    """-n 4 --top-up, no judge: finalize makes 9 rows of 4 (b's dropped), 4 are wanted, 5 are
    the surplus, on a stage of its own. Before, its note said the rows were "judged"."""
    register_plugin(TriplePlugin(), "triple-plugin")
    seed = bashgym_env.workdir / "seed.csv"
    pd.DataFrame({"task": ["a", "b", "c", "d"]}).to_csv(seed, index=False)
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-p", "triple", "-n", "4",
        "--top-up", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert (counts["generated"], counts["top_up_surplus"], counts["kept"]) == (9, 5, 4)
    stages = stage_rows((out / "report.html").read_text())
    assert list(stages) == ["Source files", "Generation triple", "Top-up", "Sink parquet"]
    assert stages["Top-up"] == (
        ["9", "0 (0%)", "4"],
        "the rows the pipeline produced; 5 passed beyond the 4 wanted and were left out",
    )
