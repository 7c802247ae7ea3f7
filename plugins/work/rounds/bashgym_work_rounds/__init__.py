"""Generation in rounds (a default plugin): a run's rows through its pipeline's runner.

The kernel's engine hands the seed to the `generate_rows` hook when a run's rows go through a
runner (a pipeline, or judges that add columns); this plugin answers it (`rounds.py`): each
round made by the runner (or the run's backend for it, e.g. in shards on Ray), finalized and
judged, and with `--top-up` more rounds until enough rows pass. It mirrors `bashgym-work-tasks`
(the `run_tasks` hook): the policy of how rows are made is a plugin, the engine only hands over.
Declared API: `generate_in_rounds`, `requested_records`, `next_round_size`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from bashgym import hookimpl
from bashgym_work_rounds.rounds import generate_in_rounds, next_round_size, requested_records

__all__ = ["generate_in_rounds", "next_round_size", "requested_records"]


@hookimpl
def generate_rows(seed: Any, runner: str, resolved: Any, run: Any, judge: Any, resume: bool) -> Any:
    """Every round through `runner`'s generate, or the run backend's for it."""
    assert run.registry is not None, "a run's context carries its registry"
    generate = run.registry.get("runners", runner).obj.generate
    if (backend := resolved.backend) is not None:  # each round made elsewhere (e.g. shards)
        generate = partial(backend.obj.generate, runner, options=backend.options)
    return generate_in_rounds(generate, resolved, seed, run, judge, resume=resume)
