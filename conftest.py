"""Fixtures for every test in this repository (kernel and plugins), and how the suite is spread
over pytest-xdist workers. The `bashgym_testing` fixtures load through its pytest11 entry point.

The suite runs on several workers (`-n` and `--dist loadgroup` in the root pyproject's pytest
options): most tests wait on subprocesses, servers and scripted model latency, so more workers
than cores keep both cores busy. Two things keep that fast and correct on 2 cores:
- groups (a scheduler of our own, below): tests that start the embedded llama.cpp model run
  one after another on one worker (each server uses 2 threads: three at once on 2 cores took
  minutes each, measured), and a module whose module-scoped fixture is costly (a browser, a
  venv with pip, a parsed repository) stays on one worker so the fixture is built once;
- order: the longest tests are handed out first, so the run does not end waiting on one long
  test that started last while the other workers sit idle.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

REPO = Path(__file__).resolve().parent

# The suite starts hundreds of `bashgym` and plugin processes. Where PYTHONDONTWRITEBYTECODE is
# set (CI machines, this workplace) each compiled ~1,300 modules from source again (importing
# DataDesigner and litellm: 12.7 s of CPU instead of 3.9 s, measured); the first one now writes
# the bytecode the rest reuse. (uv's compile-bytecode setting would do it at install, but then
# every `uv run` re-checks 18,000 files: +2 s each, measured.)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# llama.cpp (the embedded model) is built with OpenMP, whose threads spin at every barrier
# (hundreds per token) while the other thread is off its core: on 2 cores shared with the other
# workers, a request took 58-113 s and 33-46 s of server CPU with the default wait policy, and
# 26 s and 13 s with PASSIVE (same request, same busy box, measured). Every server a test
# starts, in this process or under a `bashgym` child, inherits it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Hypothesis fails an example that takes over 200 ms by default: on 2 cores shared with the
# other workers (load ~12, seen) a split property test failed that way alone. The properties
# say what a function returns, never how fast: speed is the benchmarks' business.
hypothesis_settings.register_profile("bashgym", deadline=None)
hypothesis_settings.load_profile("bashgym")

# Tests send Ctrl-C (SIGINT) to the processes they start. A suite started in the background
# (`pytest &` in a script, nohup) inherits SIGINT ignored, and so would every child: `bashgym
# serve` then never stops on Ctrl-C (measured: its test failed only in such a run).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Test files that serve the real embedded model (llama.cpp): one group, so one server at a time.
EMBEDDED_MODEL = (
    "tests/test_main_job.py",
    "plugins/models/embedded/tests/test_embedded_model.py",
    "plugins/models/embedded/tests/test_abandoned_requests.py",
    "plugins/models/embedded/tests/test_run_autostart.py",
    "plugins/pipelines/csv-triangulation/tests/test_embedded.py",
    "plugins/executors/student/tests/test_embedded.py",
    "plugins/trainers/trl/tests/test_student_adapter.py",
)

# Test files that start Ray (a local instance, raylets, or the Ray bench): one group, so one Ray
# at a time (each starts several processes; two at once on 2 cores starved both).
RAY = (
    "plugins/backends/ray/tests/test_backend.py",
    "plugins/backends/ray/tests/test_bench.py",
    "plugins/backends/ray/tests/test_cluster.py",
    "plugins/orchestrator/tests/test_backend_ray.py",
)

# Modules whose module-scoped fixture is costly to build: each stays on one worker.
ONE_WORKER_MODULES = (
    "plugins/api/tests/test_dashboard.py",  # a headless Chromium
    "tests/test_third_party.py",  # a venv and a real `pip install`
    "plugins/pipelines/code-graph/tests/test_real_repository.py",  # click's parsed graph
    "plugins/trainers/trl/tests/test_train.py",  # one training run
)

# Tests not marked slow that still took over ~20 s in a full run (2 cores, measured): handed out
# first with the slow ones. A test missing here is only scheduled later, never skipped.
LONG = (
    "plugins/commands/run/tests/test_completion.py",
    "plugins/commands/pipeline/tests/test_pipeline_cli.py::test_data_designer_cli_runs",
    "plugins/commands/report/tests/test_render.py",
    "plugins/designer/tests/test_rounds.py",
    "plugins/designer/tests/test_faults.py",
    "plugins/designer/tests/test_seeding.py",
    "plugins/orchestrator/tests/test_planning.py",
    "plugins/orchestrator/tests/test_real_workers.py",
    "plugins/commands/sandbox/tests/test_sandbox_command.py",
    "tests/test_agent_runs.py",
    "tests/test_crash_resume.py",
    "plugins/api/tests/test_orchestration.py",
    "plugins/api/tests/test_api.py",
    "plugins/backends/ray/tests/test_backend.py",
    "plugins/pipelines/csv-triangulation/tests/test_resume.py",
    "plugins/pipelines/coding-agent/tests/test_dpo_pipeline.py",
    "plugins/pipelines/code-graph/tests/test_run.py",
    "plugins/commands/pipeline/tests/test_export_portable.py",
)


@pytest.fixture
def repo() -> Path:
    """The repository root (examples/, bench/, ...)."""
    return REPO


def _path(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _group(nodeid: str) -> str | None:
    """The worker group a test belongs to (None: any worker)."""
    path = _path(nodeid)
    if path in EMBEDDED_MODEL:
        return "embedded-model"
    if path in RAY:
        return "ray"
    return path if path in ONE_WORKER_MODULES else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist load`/`loadgroup` with the groups above. (Why not `xdist_group` marks added at
    collection: pytest 9.2 builds node ids from a structured id, so xdist 3.8's loadgroup,
    which rewrites `item._nodeid`, no longer groups anything: pytest-dev/pytest-xdist#1386.
    The scheduler runs in the controller and sees each test's node id, so it groups here.)"""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # each, loadscope, loadfile, worksteal: xdist's own
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid) or super()._split_scope(nodeid)

    return Grouped(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Hand out the longest tests first: the embedded model's group, then slow and long ones (a
    stable sort, so every worker collects the same order, as xdist requires)."""

    def rank(item: pytest.Item) -> int:
        if _path(item.nodeid) in EMBEDDED_MODEL:
            return 0
        if item.get_closest_marker("slow") or item.nodeid.startswith(LONG):
            return 1
        return 2

    items.sort(key=rank)
