"""The confidence router: sends each task to the student or the teacher by a calibrated
probability that the student succeeds, fitted on verified outcomes of earlier runs.

    bashgym router fit runs/a runs/b --target teacher-share=0.3 --out router.json
    bashgym run ... --router confidence --set router.model=router.json

Modules: `features` (what is known of a task before running it), `model` (scikit-learn's
calibrated logistic regression, stored as numbers), `thresholds` (a target → the threshold),
`outcomes` (verified outcomes read back from run dirs), `fitted` (the router file, the prior),
`router` (the Router), `commands` (`bashgym router fit|show`).
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl

__all__ = ["register_commands", "register_routers"]


@hookimpl
def register_routers(register: Any) -> None:
    # here, not at the top, and `router` imports scikit-learn (~1.7 s) only when it routes
    from bashgym_routers_confidence.router import ConfidenceRouter

    register("confidence", ConfidenceRouter())


@hookimpl
def register_commands(app: Any) -> None:
    from bashgym_routers_confidence.commands import register  # (see above)

    register(app)
