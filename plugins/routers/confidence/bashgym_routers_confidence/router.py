"""The `confidence` router: the student when p(student passes) >= the threshold, else the teacher.

p comes from a fitted router file (`model`, written by `bashgym router fit`) or, with none, the
prior (see `fitted.py`). The features are the task's own (`features.py`) and, with `probe`, one
cheap model call's answer. Each route's features are recorded in the run's store
(`FEATURES_NAMESPACE`) so a later fit learns from exactly what the router saw.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from bashgym.contracts import InputError, ModelCallError, Options, Route, Router, RunContext
from bashgym.records import Task
from bashgym.text import one_line
from bashgym_routers_confidence.features import FEATURES_NAMESPACE, PROBE_FEATURE, task_features
from bashgym_routers_confidence.outcomes import DEFAULT_NAMES

if TYPE_CHECKING:
    from bashgym_routers_confidence.fitted import FittedRouter

PROBE_PROMPT = (
    "A small coding model will be given the task below. Estimate the chance, from 0 to 100, "
    "that it completes the task correctly on its own. Answer with the number only.\n\nTask:\n"
)
PROBE_CHARS = 4000  # the start of a long prompt is enough to judge it, and keeps the probe cheap


class ConfidenceOptions(Options):
    student: str = Field(DEFAULT_NAMES["student"], description="The executor tried first (cheap).")
    teacher: str = Field(DEFAULT_NAMES["teacher"], description="The executor for hard tasks.")
    model: Path | None = Field(
        default=None,
        description="A router file from `bashgym router fit`; none: the prior (hand-set, "
        "threshold 0.5).",
    )
    threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Overrides the file's threshold: student when p(student passes) >= it.",
    )
    probe: str | None = Field(
        default=None,
        description="A model alias asked once per task how likely the student is to pass "
        "(a feature; needs a router file fitted with probes). Off by default.",
    )
    escalate: bool = Field(
        default=True,
        description="Run a task the student fails (its check) again on the teacher.",
    )

    @model_validator(mode="after")
    def _two_executors(self) -> ConfidenceOptions:
        """Refuse one executor as both: every route and every escalation would go to it, and
        the run's student/teacher figures (shares, success against all-teacher) and a later
        `bashgym router fit` would compare an executor with itself."""
        if self.student == self.teacher:
            raise ValueError(
                f"student and teacher are both {self.student!r}: the router picks between two "
                "executors; set router.teacher (or router.student) to another one, or run "
                f"without a router (-x {self.student})"
            )
        return self


class ConfidenceRouter(Router[ConfidenceOptions]):
    """Student or teacher by a calibrated p(student passes) against a threshold."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, int], FittedRouter] = {}

    def inputs(self, options: ConfidenceOptions) -> list[Path]:
        """Only the router file is an input (a changed file never resumes silently)."""
        return [Path(options.model).expanduser()] if options.model else []

    def fitted(self, options: ConfidenceOptions) -> FittedRouter:
        """The router file's model (read once per version of the file), or the prior."""
        # here, not at the top: `fitted` needs scikit-learn (~1.7 s to import, with SciPy),
        # and this module is imported whenever every plugin registers (`bashgym options`, a
        # run's error that lists every choice), not only for a run that routes
        from bashgym_routers_confidence.fitted import load, prior

        if options.model is None:
            return prior()
        path = Path(options.model).expanduser()
        try:
            key = (str(path.resolve()), path.stat().st_mtime_ns)
        except OSError:
            raise InputError(f"router.model {str(path)!r} does not exist") from None
        with self._lock:
            if key not in self._cache:
                self._cache[key] = load(path)
            return self._cache[key]

    def route(self, task: Task, options: ConfidenceOptions, run: RunContext) -> Route:
        router = self.fitted(options)
        features = task_features(task)
        threshold = router.threshold if options.threshold is None else options.threshold
        if options.probe is not None:
            answer = probe(task, options.probe, run)
            if isinstance(answer, str):  # the probe failed: the safe pick, said why
                why = f"probe {options.probe!r} failed ({answer}) → teacher"
                return Route(options.teacher, why)
            features[PROBE_FEATURE] = answer
        elif PROBE_FEATURE in router.features:
            raise InputError(
                f"router file {router.path} was fitted with probe answers: set router.probe=ALIAS"
            )
        record(run, task.id, features)
        p = router.p(features)
        source = "prior" if router.is_prior else (router.target or "set by hand")
        if options.threshold is not None:
            source = "threshold set by hand"
        if p >= threshold:
            return Route(
                options.student,
                f"p(student passes)={p:.2f} ≥ {threshold:.2f} ({source}) → student",
                score=p,
                escalate_to=options.teacher if options.escalate else None,
            )
        cut = "1 (always the teacher)" if threshold > 1 else f"{threshold:.2f}"
        return Route(
            options.teacher, f"p(student passes)={p:.2f} < {cut} ({source}) → teacher", score=p
        )


def record(run: RunContext, task_id: str, features: dict[str, float]) -> None:
    """Keep the features this route used in the run's store, once per task (a resumed run
    keeps the first): `bashgym router fit` reads them back."""
    store = run.store
    if store.add(FEATURES_NAMESPACE, [(task_id, features)]) and store.claim(
        FEATURES_NAMESPACE, task_id
    ):
        store.complete(FEATURES_NAMESPACE, task_id, features)


def probe(task: Task, alias: str, run: RunContext) -> float | str:
    """Ask `alias` once how likely the student is to pass: a chance 0..1, or why it failed.

    Called in a worker thread (the router contract), so it runs its own event loop."""
    messages = [{"role": "user", "content": PROBE_PROMPT + task.prompt[:PROBE_CHARS]}]
    model: Any = run.model(alias)
    try:
        done = asyncio.run(
            model.acomplete(messages, params={"max_tokens": 8, "temperature": 0.0}, retries=1)
        )
    except ModelCallError as exc:
        return one_line(exc)
    text = str(done.message.get("content") or "")
    m = re.search(r"\d+(?:\.\d+)?", text)
    if m is None:
        return f"answered {one_line(text)[:40]!r}, not a number"
    value = float(m.group(0))
    return min(max(value / 100.0, 0.0), 1.0)  # asked for 0..100
