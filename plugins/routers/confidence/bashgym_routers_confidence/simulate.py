"""A simulated outcome set: tasks with a latent difficulty, a student and a teacher whose chance
of passing falls with it, their prices, and prompts whose features are noisy functions of it.

Why simulated: routing quality can then be measured without a model and anywhere (bench/router.py,
the tests), against an oracle that knows each task's outcome. The prompts are real text run
through the router's own feature extraction, so the simulation exercises the same code a run
does; only the link between difficulty and the text is made up, and it is noisy on purpose (a
long prompt is not always hard; a plan's turn estimate is missing for some tasks and off by up
to about 2x for the rest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bashgym.records import Task
from bashgym_routers_confidence.features import EASY_WORDS, HARD_WORDS


@dataclass(frozen=True)
class Curve:
    """p(pass | difficulty d) = 1 / (1 + exp(steepness * (d - midpoint))); price per turn."""

    midpoint: float
    steepness: float
    usd_per_turn: float

    def p(self, difficulty: np.ndarray | float) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(self.steepness * (np.asarray(difficulty) - self.midpoint)))


# A small local student (cheap: its machine's electricity) and a strong hosted teacher that
# costs about 40x as much per turn, fails rarely on easy work and sometimes on the hardest.
STUDENT = Curve(midpoint=0.5, steepness=10.0, usd_per_turn=0.0008)
TEACHER = Curve(midpoint=1.15, steepness=8.0, usd_per_turn=0.03)


@dataclass(frozen=True)
class SimTask:
    """One simulated task and what each executor would do with it (drawn once)."""

    task: Task
    difficulty: float
    p_student: float
    p_teacher: float
    student_passes: bool
    teacher_passes: bool
    turns: int
    student_cost: float
    teacher_cost: float


def simulate(
    n: int, seed: int = 0, *, student: Curve = STUDENT, teacher: Curve = TEACHER
) -> list[SimTask]:
    """`n` tasks, reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        d = float(rng.beta(1.3, 1.3))  # most tasks in the middle, some very easy or very hard
        turns = max(1, round(2 + 26 * d**1.5 * rng.lognormal(0, 0.3)))
        ps, pt = float(student.p(d)), float(teacher.p(d))
        meta: dict[str, object] = {}
        if rng.random() < 0.7:  # a plan estimated the turns (off by up to about 2x)
            meta["estimated_turns"] = max(1, round(turns * rng.lognormal(0, 0.35)))
        out.append(
            SimTask(
                task=Task(id=f"sim-{seed}-{i}", prompt=_prompt(rng, d), metadata=meta),
                difficulty=d,
                p_student=ps,
                p_teacher=pt,
                student_passes=bool(rng.random() < ps),
                teacher_passes=bool(rng.random() < pt),
                turns=turns,
                # a student that fails often stops at its turn limit: it costs its turns anyway
                student_cost=turns * student.usd_per_turn,
                teacher_cost=turns * teacher.usd_per_turn,
            )
        )
    return out


_WHOLE = {"concurren": "concurrency", "migrat": "migration", "optimi": "optimize"}  # stems
_FILLER_TEXT = (
    "the function should handle the case where the input is empty and return the result "
    "unchanged keep the public interface as it is and make sure existing callers still work "
    "update the tests so they cover the new behaviour and describe the change in the changelog"
)
_FILLER = _FILLER_TEXT.split()


def _prompt(rng: np.random.Generator, d: float) -> str:
    """A task description whose length, paths, code and words depend on `d`, noisily."""
    words = int(12 * math.exp(2.2 * d) * rng.lognormal(0, 0.45))
    parts = [" ".join(rng.choice(_FILLER, size=max(words, 4)))]
    for _ in range(rng.poisson(0.4 + 3.5 * d)):
        parts.append(f"see src/mod{rng.integers(100)}/file{rng.integers(100)}.py")
    hard = [w for w in HARD_WORDS if " " not in w and rng.random() < 0.02 + 0.12 * d]
    easy = [w for w in EASY_WORDS if " " not in w and rng.random() < 0.12 * (1 - d) ** 2]
    parts += [_WHOLE.get(w, w) for w in [*hard, *easy]]
    for _ in range(rng.poisson(0.3 + 1.2 * d)):
        body = "\n".join(f"    line_{k} = {k}" for k in range(int(rng.integers(2, 4 + 20 * d))))
        parts.append(f"```python\n{body}\n```")
    order = rng.permutation(len(parts))
    return "\n".join(parts[k] for k in order)
