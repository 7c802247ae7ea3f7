"""What the threshold means: a target, and the threshold that meets it on the fit data.

The router sends a task to the student when p(student passes) >= threshold, else to the
teacher. A threshold by itself says little (RouteLLM's users' most asked question is what its
number means), so `bashgym router fit` takes a target and derives the threshold from it:

- `teacher-share=Q`: the Q-quantile of p(student passes) over the fit data's tasks; the tasks
  scored below it — a share Q of them — go to the teacher. (RouteLLM scores the other way
  round, p(strong model needed), and calls the same cut the (1-Q)-quantile.)
- `success=S`: the lowest threshold at which the estimated success of the routed tasks is at
  least S, estimated as: each student-routed task passes with its p(student passes), each
  teacher-routed task with the teacher's verified pass rate on the fit data's tasks it would
  get (those scored below the threshold that it ran; its rate over all its tasks when it ran
  fewer than MIN_TEACHER_TASKS of them). Why not its overall rate: the tasks routed to the
  teacher are the hard ones, where it fails more often too; its overall rate overestimates
  (measured on the simulated set: 0.876 realized for a 0.90 target). The lowest such
  threshold sends the most tasks to the student (the cheapest way to meet S).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from bashgym.contracts import InputError

ALWAYS_TEACHER = math.nextafter(1.0, 2.0)  # above every probability: no task to the student
MIN_TEACHER_TASKS = 5  # fewer teacher outcomes below a threshold: its overall rate stands in


class TargetError(InputError):
    """A target that cannot be parsed or met (one line saying why)."""


@dataclass(frozen=True)
class Target:
    kind: str  # "teacher-share" | "success"
    value: float

    def __str__(self) -> str:
        return f"{self.kind}={self.value:g}"

    @classmethod
    def parse(cls, text: str) -> Target:
        """`teacher-share=0.3` or `success=0.95` (TargetError naming both otherwise)."""
        m = re.fullmatch(r"\s*(teacher-share|success)\s*=\s*([0-9.eE+-]+)\s*", text or "")
        if m is None:
            raise TargetError(
                f"unknown target {text!r}: use teacher-share=Q (a share 0..1 of the tasks "
                "sent to the teacher) or success=S (the success 0..1 routed tasks must reach)"
            )
        try:
            value = float(m.group(2))
        except ValueError:
            raise TargetError(f"target {text!r}: {m.group(2)!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise TargetError(f"target {text!r}: the value must be between 0 and 1")
        return cls(m.group(1), value)


@dataclass(frozen=True)
class Estimate:
    """What routing the fit data's tasks at `threshold` would do, by the model's estimates."""

    threshold: float
    teacher_share: float
    success: float  # student-routed: mean p; teacher-routed: the teacher's verified rate
    teacher_rate: float | None


def choose(
    scores: np.ndarray,
    target: Target,
    teacher_rate: float | None,
    teacher_passed: np.ndarray | None = None,
) -> Estimate:
    """The threshold `target` asks for over `scores` (p(student passes), one per task);
    `teacher_passed`: per task the teacher's verified pass rate there (NaN: it did not run it)."""
    order = np.argsort(np.asarray(scores, dtype=float), kind="stable")
    scores = np.asarray(scores, dtype=float)[order]
    if teacher_passed is not None:
        teacher_passed = np.asarray(teacher_passed, dtype=float)[order]
    if not len(scores):
        raise TargetError("no tasks to set a threshold on")
    if target.kind == "teacher-share":
        q = target.value
        threshold = ALWAYS_TEACHER if q >= 1.0 else float(np.quantile(scores, q))
        if q <= 0.0:
            threshold = 0.0
        return estimate(scores, threshold, teacher_rate, teacher_passed)
    if teacher_rate is None:
        raise TargetError(
            f"{target} needs the teacher's verified pass rate and these runs hold no teacher "
            "outcome: give --teacher-success R, or use --target teacher-share=Q"
        )
    # candidates from the lowest (all to the student) up to above every score (all teacher)
    best = 0.0
    for threshold in [*np.unique(scores), ALWAYS_TEACHER]:
        got = estimate(scores, float(threshold), teacher_rate, teacher_passed)
        if got.success >= target.value - 1e-12:
            return got
        best = max(best, got.success)
    raise TargetError(
        f"{target} cannot be met on the fit data: the best mix reaches about {best:.3f} "
        f"(teacher alone {teacher_rate:.3f}); lower the target"
    )


def estimate(
    scores: np.ndarray,
    threshold: float,
    teacher_rate: float | None,
    teacher_passed: np.ndarray | None = None,
) -> Estimate:
    """Teacher share and estimated success when tasks scoring >= `threshold` go to the student
    (the teacher's rate: on the tasks it gets, where it ran enough of them; see the module)."""
    scores = np.asarray(scores, dtype=float)
    student = scores >= threshold
    rate = teacher_rate
    if teacher_passed is not None:
        ran = ~student & ~np.isnan(teacher_passed)
        if ran.sum() >= MIN_TEACHER_TASKS:
            rate = float(teacher_passed[ran].mean())
    share = float(1.0 - student.mean())
    success = float(np.where(student, scores, math.nan if rate is None else rate).mean())
    return Estimate(threshold, share, success, rate)
