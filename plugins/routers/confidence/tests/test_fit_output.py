"""What `bashgym router fit` and `bashgym router show` print at the edges: a threshold that sends
every task to the teacher (or none) in words and rounded, never the float above 1 the file
keeps; and each cost estimate the runs cannot give as `unknown` with the reason (which model
has no price), as the README says, instead of a missing line."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bashgym_routers_confidence.fitted import fit
from bashgym_routers_confidence.outcomes import read_runs
from bashgym_routers_confidence.simulate import simulate
from bashgym_routers_confidence.thresholds import Target
from confidence_runs import Attempt, checked, write_run

UNPRICED = "the student 'cheap' ran model 'mini-unpriced', which has no price"


def routed_run(root: Path, *, student_cost: float | None, teacher_cost: float | None = 0.01):
    """A `--router confidence` run at threshold 0 on 12 tasks: the student ('cheap', model
    'mini-unpriced') passed 2, the other 10 escalated to the teacher ('strong'), which passed."""
    attempts = []
    for i, s in enumerate(simulate(12, seed=31)):
        task, ok = checked(s.task), i in (0, 6)
        attempts.append(Attempt(task, "cheap", ok, student_cost, model="mini-unpriced"))
        if not ok:
            attempts.append(Attempt(task, "strong", True, teacher_cost, attempt="escalated"))
    return write_run(root, attempts, routed=("cheap", "strong"))


def test_every_task_to_the_teacher_reads_as_such(bashgym_cli, tmp_path: Path) -> None:
    run = routed_run(tmp_path / "run", student_cost=0.001)
    out = tmp_path / "router.json"
    # the student's best task is below 0.9 and the teacher passed all: only all-teacher gets 0.99
    done = bashgym_cli("router", "fit", run, "--target", "success=0.99", "--out", out)
    assert done.exit_code == 0, done.output
    assert json.loads(out.read_text())["threshold"] > 1  # the file keeps "above every p"
    said = done.stdout
    assert "target success=0.99: threshold 1.00 (every task to the teacher)\n" in said
    assert "threshold every task" not in said and "1.0000000000000002" not in said
    assert "every task goes to the teacher and the student gets none" in said
    shown = bashgym_cli("router", "show", out)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines() == said.splitlines()[1:]  # `show` says the same
    # the other end: no task to the teacher
    done = bashgym_cli("router", "fit", run, "--target", "teacher-share=0", "--out", out)
    assert done.exit_code == 0, done.output
    assert "target teacher-share=0: threshold 0.00 (every task to the student)\n" in done.stdout
    assert "(1 outcomes)" not in said + done.stdout  # a reliability bin of one outcome


def test_a_student_without_a_price_prints_each_cost_estimate_unknown(
    bashgym_cli, tmp_path: Path
) -> None:
    run = routed_run(tmp_path / "run", student_cost=None)
    out = tmp_path / "router.json"
    done = bashgym_cli("router", "fit", run, "--target", "teacher-share=0.5", "--out", out)
    assert done.exit_code == 0, done.output
    said = done.stdout
    assert f"cost saved vs all-teacher unknown ({UNPRICED})" in said
    assert (
        "with a check and escalation, the p above which trying the student first costs less "
        f"is unknown ({UNPRICED})" in said
    )
    exp = json.loads(out.read_text())["expected"]
    assert exp["unknown"] == {
        "saved_vs_all_teacher": UNPRICED,
        "escalation_pays_above_p": UNPRICED,
    }
    shown = bashgym_cli("router", "show", out)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines() == said.splitlines()[1:]


def test_no_teacher_cost_and_a_free_teacher_say_why(tmp_path: Path) -> None:
    run = routed_run(tmp_path / "free", student_cost=0.001, teacher_cost=0.0)
    share = Target.parse("teacher-share=0.5")
    free = fit(read_runs([run]).outcomes, share, student="cheap", teacher="strong")
    exp = free.expected
    # a $0 teacher: no share of $0 to save, and no finite break-even (was inf, then "Infinity")
    assert "saved_vs_all_teacher" not in exp and "escalation_pays_above_p" not in exp
    assert exp["unknown"]["escalation_pays_above_p"].startswith("the teacher cost $0")
    assert all(math.isfinite(v) for v in exp.values() if isinstance(v, float))
    json.dumps(free.to_json(), allow_nan=False)
    # no outcome of the teacher at all (the student ran alone): its cost is unknown, and why
    alone = write_run(
        tmp_path / "alone",
        [Attempt(checked(s.task), "cheap", i % 3 == 0) for i, s in enumerate(simulate(9))],
    )
    solo = fit(read_runs([alone]).outcomes, share, student="cheap", teacher="strong")
    assert solo.expected["unknown"]["saved_vs_all_teacher"] == (
        "the teacher 'strong' has no outcome in these runs to give its cost"
    )
