"""What `bashgym router fit` says about the runs it read: the student and teacher they recorded,
outcomes counted for the role that ran them, and every figure in words (no raw `None`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bashgym_routers_confidence.commands import app
from bashgym_routers_confidence.fitted import describe, fit, load
from bashgym_routers_confidence.outcomes import read_runs, roles
from bashgym_routers_confidence.router import ConfidenceOptions
from bashgym_routers_confidence.simulate import simulate
from bashgym_routers_confidence.thresholds import Target
from bashgym_testing import ScriptedExecutor
from confidence_runs import Attempt, checked, write_run
from pydantic import ValidationError
from typer.testing import CliRunner

from bashgym import hookimpl
from bashgym.contracts import InputError

SHARE = Target.parse("teacher-share=0.3")


def tasks(n: int, seed: int = 31) -> list:
    return [checked(s.task) for s in simulate(n, seed=seed)]


def routed_run(root: Path, name: str, student: str, teacher: str, n: int = 6) -> Path:
    """A `--router confidence` run at threshold 0: every task tried by `student` first, the
    odd ones failed their check and escalated to `teacher`, which passed them."""
    attempts = []
    for i, task in enumerate(tasks(n)):
        attempts.append(Attempt(task, student, passed=i % 2 == 0))
        if i % 2:
            attempts.append(Attempt(task, teacher, passed=True, attempt="escalated"))
    return write_run(root / name, attempts, routed=(student, teacher))


def fit_cli(*args: object):
    return CliRunner().invoke(app, ["fit", *(str(a) for a in args)])


def test_fit_takes_the_student_and_teacher_the_runs_recorded(tmp_path: Path) -> None:
    run = routed_run(tmp_path, "r", "mini", "big")
    out = tmp_path / "router.json"
    done = fit_cli(run, "--target", "teacher-share=0.3", "--out", out)
    assert done.exit_code == 0, done.output
    assert "student 'mini', teacher 'big'" in done.stdout
    training = json.loads(out.read_text())["training"]
    assert (training["student"]["outcomes"], training["student"]["passed"]) == (6, 3)
    assert (training["teacher"]["outcomes"], training["teacher"]["passed"]) == (3, 3)
    # a flag overrides what the runs recorded; the attempts that are neither role's are counted
    done = fit_cli(run, "--target", "teacher-share=0.3", "--out", out, "--teacher", "huge")
    assert done.exit_code == 0, done.output
    assert "student 'mini', teacher 'huge'" in done.stdout
    assert "3 attempts left out: run by 'big', neither the student nor the teacher" in done.stdout
    assert json.loads(out.read_text())["training"]["teacher"]["outcomes"] == 0


def test_runs_that_recorded_different_names_are_refused_naming_them(tmp_path: Path) -> None:
    a = routed_run(tmp_path, "a", "mini", "big")
    b = routed_run(tmp_path, "b", "mini", "huge")
    plain = write_run(tmp_path / "plain", [Attempt(t, "mini", True) for t in tasks(3, 7)])
    read = read_runs([a, b, plain])
    with pytest.raises(InputError) as refused:
        roles(read)
    said = str(refused.value)
    assert "different teachers" in said and "--teacher" in said
    assert f"'big' in {a}" in said and f"'huge' in {b}" in said and str(plain) not in said
    assert roles(read, teacher="big") == ("mini", "big")  # the flag settles it
    # a plain run records nothing: the names default, as before there were routed runs
    assert roles(read_runs([plain])) == ("student", "claude-cli")


def test_a_run_whose_teacher_was_its_student_needs_a_named_teacher(tmp_path: Path) -> None:
    """The QA run: `router.teacher=student`; its escalated attempt is no student outcome."""
    run = routed_run(tmp_path, "same", "student", "student", n=4)
    read = read_runs([run])
    with pytest.raises(InputError, match=rf"both 'student' \(recorded by {run}\).*--teacher"):
        roles(read)
    router = fit(read.outcomes, SHARE, student="student", teacher="claude-cli")
    s, t = router.training["student"], router.training["teacher"]
    # 4 first attempts, 2 passed; the 2 escalated ones are the teacher's, not the student's
    assert (s["outcomes"], s["passed"], t["outcomes"]) == (4, 2, 0)
    assert router.training["skipped"] == {
        "an escalated attempt the student ran (escalations are the teacher's)": 2
    }
    with pytest.raises(InputError, match="both 'student'"):
        fit(read.outcomes, SHARE, student="student", teacher="student")


def test_describe_says_unknown_and_counts_in_words(tmp_path: Path) -> None:
    one, two = tasks(2, 5), tasks(3, 6)
    attempts = [Attempt(t, "student", i % 2 == 0) for i, t in enumerate(tasks(6))]
    attempts.append(Attempt(one[0].model_copy(update={"metadata": {}}), "student", True))
    attempts += [Attempt(t, "student", None, status="error") for t in two[:2]]
    run = write_run(tmp_path / "r", attempts)
    out = tmp_path / "router.json"
    done = fit_cli(run, "--target", "teacher-share=0.3", "--out", out)
    assert done.exit_code == 0, done.output
    assert "None" not in done.stdout
    assert "success unknown (no teacher outcome" in done.stdout
    assert "  1 attempt left out: its task has no check\n" in done.stdout
    assert "  2 attempts left out: no verdict (a run from before checks)\n" in done.stdout
    assert describe(load(out)) == done.stdout.splitlines()[1:]  # `show` says the same


def test_a_router_refuses_one_executor_as_student_and_teacher(
    bashgym_cli, register_plugin, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="both 'mini'"):
        ConfidenceOptions(student="mini", teacher="mini")

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("cheap", ScriptedExecutor())

    register_plugin(Plugin(), "confidence-same-test")
    source = tmp_path / "tasks.csv"
    source.write_text("id,prompt,check\nt1,write hi,true\n")
    done = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={source}", "-k", "parquet",
        "--router", "confidence", "--set", "router.student=cheap",
        "--set", "router.teacher=cheap", "--out", tmp_path / "run",
    )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert "student and teacher are both 'cheap'" in done.stderr
    assert "Traceback" not in done.output and len(done.stderr.strip().splitlines()) <= 3
    assert not (tmp_path / "run" / "run.json").exists()
