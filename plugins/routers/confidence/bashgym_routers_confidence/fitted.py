"""A fitted router: the model, its features, the threshold and the target it came from, the
counts it was fitted on and how well calibrated it is — one small JSON file (`bashgym router
fit` writes it, the `confidence` router and `bashgym router show` read it).

Also the prior: what the router uses with no file. Its coefficients are set by hand, not
fitted (there are no outcomes yet); they encode the obvious — longer prompts, more files,
more estimated turns and words such as "refactor" or "concurrency" lower the student's
chances; words such as "typo" or "rename" raise them — and the threshold is 0.5. Replace it
with `bashgym router fit` as soon as a run has verified outcomes.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import sklearn

from bashgym.contracts import InputError
from bashgym_routers_confidence.features import BASE_FEATURES, PROBE_FEATURE, vector
from bashgym_routers_confidence.model import FitError, StudentModel, fit_student
from bashgym_routers_confidence.outcomes import DEFAULT_NAMES, Outcome, counted, left_out
from bashgym_routers_confidence.thresholds import Estimate, Target, choose

FORMAT = "bashgym-router/1"

# the prior's logit of p(student passes), per feature, on the raw values (see the docstring)
PRIOR_INTERCEPT = 4.0
PRIOR_COEF = {
    "log_prompt_chars": -0.45,  # 150 chars: -2.3; 3,000 chars: -3.6
    "code_blocks": 0.0,
    "log_code_lines": -0.15,
    "inline_code": 0.0,
    "file_refs": -0.35,
    "log_est_turns": -0.6,  # 5 turns: -1.1; 30 turns: -2.1
    "has_est_turns": 0.0,
    "hard_words": -0.8,
    "easy_words": 0.6,
    "depends_on": -0.2,
}
PRIOR_THRESHOLD = 0.5


@dataclass
class Summary:
    """One executor's verified outcomes in the fit data."""

    outcomes: int = 0
    passed: int = 0
    cost_usd: float | None = None  # mean over the outcomes with a known cost
    turns: float | None = None  # mean over the outcomes with known turns

    @property
    def rate(self) -> float | None:
        return self.passed / self.outcomes if self.outcomes else None

    @classmethod
    def of(cls, outcomes: Sequence[Outcome]) -> Summary:
        costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
        turns = [o.turns for o in outcomes if o.turns is not None]
        return cls(
            outcomes=len(outcomes),
            passed=sum(o.passed for o in outcomes),
            cost_usd=round(float(np.mean(costs)), 6) if costs else None,
            turns=round(float(np.mean(turns)), 3) if turns else None,
        )


@dataclass
class FittedRouter:
    """What `bashgym router fit` wrote (or the prior): `p(features)` and the threshold."""

    model: StudentModel
    threshold: float
    target: str | None = None  # e.g. "teacher-share=0.3"; None: the prior
    student: str = DEFAULT_NAMES["student"]
    teacher: str = DEFAULT_NAMES["teacher"]
    expected: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)
    fitted_at: str | None = None
    path: Path | None = None

    @property
    def features(self) -> list[str]:
        return self.model.features

    @property
    def is_prior(self) -> bool:
        return self.target is None

    def p(self, features: dict[str, float]) -> float:
        """p(student passes) for one task's features (ValueError naming a missing one)."""
        return float(self.model.predict([vector(features, self.features)])[0])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "target": self.target,
            "threshold": self.threshold,
            "student": self.student,
            "teacher": self.teacher,
            "model": self.model.to_json(),
            "expected": self.expected,
            "training": self.training,
            "calibration": self.calibration,
            "fitted_at": self.fitted_at,
            "scikit_learn": sklearn.__version__,
        }

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        tmp.replace(path)
        self.path = path
        return path


@cache  # read-only once built: every route of a run without a file shares it
def prior() -> FittedRouter:
    """The router with no fitted file (see the module docstring): the coefficients on the raw
    feature values (a scaler that leaves them as they are)."""
    names = list(BASE_FEATURES)
    model = StudentModel.from_json(
        {
            "features": names,
            "scaler": {"mean": [0.0] * len(names), "scale": [1.0] * len(names)},
            "logistic": {"coef": [PRIOR_COEF[n] for n in names], "intercept": PRIOR_INTERCEPT},
        }
    )
    return FittedRouter(model, PRIOR_THRESHOLD)


def load(path: Path) -> FittedRouter:
    """The fitted router in `path` (InputError, one line, for anything that is not one)."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"router file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"router file {str(path)!r} cannot be read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(
            f"{path} is not a fitted router ({FORMAT}); write one with `bashgym router fit`"
        )
    try:
        model = StudentModel.from_json(data["model"])
        threshold = float(data["threshold"])
        unknown = set(model.features) - {*BASE_FEATURES, PROBE_FEATURE}
        if unknown:
            raise ValueError(f"features this version does not compute: {sorted(unknown)}")
        if not math.isfinite(threshold):
            raise ValueError("the threshold is not a number")
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: a broken router file: {exc}") from None
    return FittedRouter(
        model,
        threshold,
        target=data.get("target"),
        student=str(data.get("student", DEFAULT_NAMES["student"])),
        teacher=str(data.get("teacher", DEFAULT_NAMES["teacher"])),
        expected=data.get("expected") or {},
        training=data.get("training") or {},
        calibration=data.get("calibration") or {},
        fitted_at=data.get("fitted_at"),
        path=path,
    )


def fit(
    outcomes: Sequence[Outcome],
    target: Target,
    *,
    student: str = DEFAULT_NAMES["student"],
    teacher: str = DEFAULT_NAMES["teacher"],
    teacher_success: float | None = None,
    runs: Sequence[str] = (),
    skipped: dict[str, int] | None = None,
    seed: int = 0,
) -> FittedRouter:
    """Fit p(student passes) on the student's verified outcomes and set the threshold `target`
    asks for over every task's score (FitError / TargetError, one line, when it cannot).

    The student's outcomes are its first attempts; the teacher's are all of its attempts, an
    escalated one included (the teacher's outcome on the task the student failed). Any other
    attempt is left out and counted in `training.skipped`, so the counts add up."""
    if student == teacher:
        raise FitError(f"student and teacher are both {student!r}: name two executors")
    mine, theirs, others = roles_of(outcomes, student, teacher)
    names = list(BASE_FEATURES)
    if mine and all(PROBE_FEATURE in o.features for o in mine):
        names.append(PROBE_FEATURE)  # every student outcome was routed with a probe
    if not mine:
        executors = sorted({o.executor for o in outcomes}) or ["none"]
        raise FitError(
            f"no verified outcome of the student {student!r} (executors in these runs: "
            f"{', '.join(executors)}): name it with --student"
        )
    x = np.array([vector(o.features, names) for o in mine])
    y = np.array([int(o.passed) for o in mine])
    model, calibration = fit_student(x, y, names, seed=seed)
    # every task once (one both executors ran, or several runs ran, counts once): the scores
    # the target sets the threshold on, and per task the teacher's verified pass rate there
    tasks: dict[tuple[Any, ...], Outcome] = {}
    for o in outcomes:
        if all(n in o.features for n in names):
            tasks.setdefault(_identity(o), o)
    scores = model.predict([vector(o.features, names) for o in tasks.values()])
    summary_t = Summary.of(theirs)
    if teacher_success is not None:  # assumed by the user: one rate for every task
        rate, per_task = teacher_success, None
    else:
        rate, per_task = summary_t.rate, _per_task(tasks, theirs)
    chosen = choose(scores, target, rate, per_task)
    summary_s = Summary.of(mine)
    return FittedRouter(
        model,
        chosen.threshold,
        target=str(target),
        student=student,
        teacher=teacher,
        expected=expected(chosen, scores, _costs(tasks, mine, theirs, student, teacher), rate),
        training={
            "runs": list(runs),
            "tasks": len(tasks),
            "student": summary_s.__dict__,
            "teacher": summary_t.__dict__,
            "teacher_success": rate,
            "teacher_success_from": _rate_from(teacher_success, theirs),
            "skipped": dict(Counter(skipped or {}) + others),
        },
        calibration=calibration.to_json(),
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def roles_of(
    outcomes: Sequence[Outcome], student: str, teacher: str
) -> tuple[list[Outcome], list[Outcome], Counter[str]]:
    """The student's outcomes (its first attempts), the teacher's (every attempt of it), and
    the rest counted by why (as `outcomes.left_out` words them)."""
    mine: list[Outcome] = []
    theirs: list[Outcome] = []
    others: Counter[str] = Counter()
    for o in outcomes:
        if o.executor == teacher:
            theirs.append(o)
        elif o.executor == student and o.attempt == "first":
            mine.append(o)
        elif o.executor == student:  # the run's teacher was the student, or another name
            others["an escalated attempt the student ran (escalations are the teacher's)"] += 1
        else:
            others[f"run by {o.executor!r}, neither the student nor the teacher"] += 1
    return mine, theirs, others


def _identity(o: Outcome) -> tuple[Any, ...]:
    """The same task across runs: its id and what it looks like (its base features), so two
    runs' `row-1` that are different tasks stay two."""
    return (o.task_id, *(round(o.features[n], 9) for n in BASE_FEATURES if n in o.features))


def _per_task(tasks: dict[tuple[Any, ...], Outcome], theirs: Sequence[Outcome]) -> np.ndarray:
    """Per task (in `tasks`' order) the teacher's verified pass rate on it; NaN: not run."""
    runs: dict[tuple[Any, ...], list[bool]] = {}
    for o in theirs:
        runs.setdefault(_identity(o), []).append(o.passed)
    return np.array([np.mean(runs[k]) if k in runs else np.nan for k in tasks])


def _rate_from(given: float | None, theirs: Sequence[Outcome]) -> str | None:
    """Where the teacher's pass rate came from (None: nowhere, it is unknown)."""
    return "--teacher-success" if given is not None else ("outcomes" if theirs else None)


def expected(
    chosen: Estimate,
    scores: np.ndarray,
    costs: tuple[np.ndarray, np.ndarray] | str,
    teacher_rate: float | None,
) -> dict[str, Any]:
    """What routing the fit data at the threshold is estimated to give, beside all-teacher:
    teacher share, success, and cost (`costs`: per task, each executor's cost there — measured
    where it ran the task, its mean elsewhere; or why a cost is unknown). A cost figure that
    cannot be had is in `unknown`, by its key, with the reason."""
    out: dict[str, Any] = {
        "teacher_share": round(chosen.teacher_share, 4),
        "success": None if math.isnan(chosen.success) else round(chosen.success, 4),
        "all_student_success": round(float(np.mean(scores)), 4),
        "all_teacher_success": teacher_rate,
        # the teacher's rate on the tasks it would get (see thresholds.estimate)
        "teacher_success_on_its_tasks": chosen.teacher_rate,
    }
    unknown: dict[str, str] = {}
    if isinstance(costs, str):
        unknown["saved_vs_all_teacher"] = unknown["escalation_pays_above_p"] = costs
    else:
        mine, theirs = costs
        routed = float(np.where(scores >= chosen.threshold, mine, theirs).sum())
        out["cost_usd"] = round(routed, 6)
        out["all_teacher_cost_usd"] = round(float(theirs.sum()), 6)
        if theirs.sum() > 0:
            out["saved_vs_all_teacher"] = round(1 - routed / float(theirs.sum()), 4)
            # a failed check costs the student's attempt and then the teacher's: trying the
            # student first is cheaper in expectation when p * teacher > student
            out["escalation_pays_above_p"] = round(float(mine.mean() / theirs.mean()), 4)
        else:
            free = "the teacher cost $0 on these runs, so there is no cost to save against"
            unknown["saved_vs_all_teacher"] = unknown["escalation_pays_above_p"] = free
    if unknown:
        out["unknown"] = unknown
    if out["success"] is not None and teacher_rate:
        out["retained_vs_all_teacher"] = round(out["success"] / teacher_rate, 4)
    return out


def _costs(
    tasks: dict[tuple[Any, ...], Outcome],
    mine: Sequence[Outcome],
    theirs: Sequence[Outcome],
    student: str,
    teacher: str,
) -> tuple[np.ndarray, np.ndarray] | str:
    """Per task (in `tasks`' order) the student's and the teacher's cost: the mean of what it
    cost where the executor ran it, the executor's mean cost elsewhere; or, when an executor
    has no known cost, why (the models it ran that have no price)."""
    out = []
    for role, name, done in (("student", student, mine), ("teacher", teacher, theirs)):
        by: dict[tuple[Any, ...], list[float]] = {}
        for o in done:
            if o.cost_usd is not None:
                by.setdefault(_identity(o), []).append(o.cost_usd)
        if not by:
            return _no_cost(role, name, done)
        mean = float(np.mean([c for cs in by.values() for c in cs]))
        out.append(np.array([np.mean(by[k]) if k in by else mean for k in tasks]))
    return out[0], out[1]


def _no_cost(role: str, name: str, done: Sequence[Outcome]) -> str:
    """Why the `role` executor `name` has no known cost in `done` (its outcomes)."""
    if not done:
        return f"the {role} {name!r} has no outcome in these runs to give its cost"
    models = sorted({o.model for o in done if o.model})
    if not models:
        return f"the {role} {name!r} recorded no cost on its {counted(len(done), 'attempt')}"
    which = ", ".join(repr(m) for m in models)
    if len(models) == 1:
        return f"the {role} {name!r} ran model {which}, which has no price"
    return f"the {role} {name!r} ran models {which}, which have no price"


def shown_threshold(t: float) -> str:
    """The threshold for a terminal, rounded, and in words at the ends: above 1 (no p reaches
    it: `thresholds.ALWAYS_TEACHER`) sends every task to the teacher, 0 every task to the
    student."""
    if t > 1:
        return "1.00 (every task to the teacher)"
    if t <= 0:
        return "0.00 (every task to the student)"
    return f"{t:.4f}"


def describe(router: FittedRouter) -> list[str]:
    """What a fitted router is and what its threshold means, in lines for a terminal."""
    cut = shown_threshold(router.threshold)
    where = f" ({router.path})" if router.path else ""
    if router.is_prior:
        return [
            f"the prior{where}: hand-set coefficients, not fitted; threshold {cut}",
            "  a task goes to the student when p(student passes) >= the threshold",
        ]
    lines = [f"fitted router{where}, {router.fitted_at or 'date unknown'}"]
    lines.append(f"  student {router.student!r}, teacher {router.teacher!r}")
    lines.append(f"  target {router.target}: threshold {cut}")
    lines.append("  a task goes to the student when p(student passes) >= the threshold;")
    lines.append(f"  {meaning(router)}")
    exp = router.expected
    if exp:
        parts = [f"teacher share {exp.get('teacher_share')}", f"success {_success(exp)}"]
        if exp.get("all_teacher_success") is not None:
            parts.append(f"all-teacher success {exp['all_teacher_success']:.4f}")
        unknown = exp.get("unknown") or {}
        if "saved_vs_all_teacher" in exp:
            parts.append(f"cost saved vs all-teacher {exp['saved_vs_all_teacher']:.1%}")
        elif "saved_vs_all_teacher" in unknown:
            parts.append(f"cost saved vs all-teacher unknown ({unknown['saved_vs_all_teacher']})")
        if "retained_vs_all_teacher" in exp:
            parts.append(f"success retained {exp['retained_vs_all_teacher']:.1%}")
        lines.append("  on the fit data (estimated): " + ", ".join(parts))
        if "escalation_pays_above_p" in exp:
            lines.append(
                "  with a check and escalation, trying the student first costs less in "
                f"expectation wherever p > {exp['escalation_pays_above_p']:.3f} (student / "
                "teacher mean cost): a threshold above that trades money for time"
            )
        elif "escalation_pays_above_p" in unknown:
            lines.append(
                "  with a check and escalation, the p above which trying the student first "
                f"costs less is unknown ({unknown['escalation_pays_above_p']})"
            )
    tr = router.training
    if tr:
        s, th = tr.get("student") or {}, tr.get("teacher") or {}
        lines.append(
            f"  fitted on {tr.get('tasks')} tasks from {len(tr.get('runs') or [])} run(s): "
            f"student {s.get('passed')}/{s.get('outcomes')} passed, "
            f"teacher {th.get('passed')}/{th.get('outcomes')} passed (verified)"
        )
        lines += [f"  {line}" for line in left_out(tr.get("skipped") or {})]
    cal = router.calibration
    if cal:
        figures = (
            f"Brier {cal['brier']}, log loss {cal['log_loss']}, ROC AUC {cal['roc_auc']} "
            f"({cal['folds']}-fold, out of fold)"
            if cal.get("brier") is not None
            else "too few outcomes to measure"
        )
        lines.append(f"  calibration {cal.get('method')}: {figures}")
        for p, rate, n in cal.get("reliability") or []:
            lines.append(f"    predicted {p:.2f} -> passed {rate:.2f} ({counted(n, 'outcome')})")
    lines.append(f"  features: {', '.join(router.features)}")
    return lines


def _success(expected: dict[str, Any]) -> str:
    """The estimated success, or why it is unknown: the teacher-routed tasks' pass rate is."""
    success = expected.get("success")
    if success is not None:
        return f"{success}"
    return (
        "unknown (no teacher outcome gives the teacher's pass rate on the tasks it would get; "
        "--teacher-success R assumes one)"
    )


def meaning(router: FittedRouter) -> str:
    """The target in words: what the threshold was chosen to achieve."""
    target = router.target or ""
    kind, _, value = target.partition("=")
    if router.threshold > 1:  # thresholds.ALWAYS_TEACHER: no p reaches it
        why = (
            "the target asks for every task"
            if kind == "teacher-share"
            else "no threshold that leaves the student a task reaches the target on the fit data"
        )
        return f"{why}, so every task goes to the teacher and the student gets none"
    if kind == "teacher-share":
        return (
            f"the threshold is the {float(value):g}-quantile of p over the fit data's tasks, so "
            f"about {float(value):.0%} of tasks like them go to the teacher"
        )
    if kind == "success":
        return (
            "the threshold is the lowest at which the routed tasks' estimated success "
            "(student: p; teacher: its verified rate on the tasks it would get) is at least "
            f"{float(value):g}"
        )
    return "threshold set by hand"
