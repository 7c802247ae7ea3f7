"""`bashgym router fit` and `bashgym router show`: fit a router on earlier runs, and say what
a fitted one is and what its threshold means."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

THRESHOLD_HELP = (
    "What the threshold means: the router sends a task to the student when p(student passes), "
    "a calibrated probability from the task's features, is at least the threshold; otherwise "
    "to the teacher. You do not pick the number: you pick a target, and the fit derives the "
    "number from it on the runs you give.\n\n"
    "--target teacher-share=0.3: the threshold is the 0.3-quantile of p over these runs' tasks, "
    "so the 30% of tasks least likely to pass go to the teacher (and about 30% of new tasks "
    "like them).\n\n"
    "--target success=0.95: the threshold is the lowest at which the routed tasks' estimated "
    "success is at least 0.95 (a student-routed task counts its p, a teacher-routed one the "
    "teacher's verified pass rate on the tasks of these runs it would get): the most work for "
    "the student that keeps 95% success.\n"
)

app = typer.Typer(
    help="Fit the confidence router on verified outcomes of earlier runs, and show a fitted "
    "one.\n\n" + THRESHOLD_HELP,
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command(
    "fit",
    help="Fit the router on RUN_DIRs' verified outcomes and write it (a small JSON file).\n\n"
    "Outcomes are tasks whose success their check command verified (never the agent's own "
    "claim); the student's outcomes teach p(student passes) — scikit-learn's logistic "
    "regression on the task's features, calibrated by cross-validation when there are "
    "enough — and the teacher's give its pass rate and cost. A routed run holds the "
    "student's outcomes only on the tasks routed to it: a first run with "
    "--set router.threshold=0 (every task tries the student, a failed check escalates to the "
    "teacher) gives the student's outcome on every task.\n\n" + THRESHOLD_HELP + "\n"
    "Use the file: bashgym run ... --router confidence --set router.model=PATH",
)
def fit_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR...", help="Run directories of agent runs with checked tasks."
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--target",
            "-t",
            help="teacher-share=Q (share of tasks sent to the teacher) or success=S (success "
            "the routed tasks must reach), each 0..1.",
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write the fitted router.")
    ] = Path("router.json"),
    student: Annotated[
        str | None,
        typer.Option(
            help="The student's executor name in those runs. Default: the one the routed runs "
            "recorded (run.toml's router.student), else 'student'.",
            show_default=False,
        ),
    ] = None,
    teacher: Annotated[
        str | None,
        typer.Option(
            help="The teacher's executor name in those runs. Default: the one the routed runs "
            "recorded (run.json's routing.teacher), else 'claude-cli'.",
            show_default=False,
        ),
    ] = None,
    teacher_success: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="The teacher's pass rate to assume for success=S when the runs hold no (or "
            "too few) teacher outcomes.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the cross-validation folds.")] = 0,
) -> None:
    # here, not at the top: scikit-learn (~0.5 s) is not needed to build the command line
    from bashgym_routers_confidence.fitted import describe, fit
    from bashgym_routers_confidence.outcomes import read_runs, roles
    from bashgym_routers_confidence.thresholds import Target

    goal = Target.parse(target)  # before reading anything: a typo fails at once
    read = read_runs(run_dirs)
    student, teacher = roles(read, student, teacher)  # what the runs recorded; flags override
    router = fit(
        read.outcomes,
        goal,
        student=student,
        teacher=teacher,
        teacher_success=teacher_success,
        runs=read.runs,
        skipped=dict(read.skipped),
        seed=seed,
    )
    router.save(out)
    typer.echo(f"wrote {out}")
    for line in describe(router):
        typer.echo(line)


@app.command("show")
def show_command(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="A router file written by `bashgym router fit`.")
    ],
) -> None:
    """What a fitted router is: its target and threshold (and what they mean), the outcomes it
    was fitted on, its calibration, and what it is estimated to do on its fit data."""
    from bashgym_routers_confidence.fitted import describe, load  # (see fit_command)

    for line in describe(load(path)):
        typer.echo(line)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="router")
