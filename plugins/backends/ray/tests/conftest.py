"""One local Ray instance for this plugin's tests (it starts once, not per test), and the test
plugin the runs load with `--plugin` (a file, so Ray workers load it too): a seeded pipeline whose
rows come from the scripted model, and an agent executor.

Its workers get their environment where the instance starts, as a cluster node's raylet would:
the scripted models' key (by the env var the `scripted_models` fixture names) is set first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPTED_KEY = ("BASHGYM_SCRIPTED_KEY", "scripted-key")  # as bashgym_testing's fixture sets it


@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    pytest.importorskip("ray", reason="Ray is not installed (bashgym-backends-ray[ray])")
    from bashgym_backends_ray.cluster import import_ray

    ray = import_ray()  # its `uv run` hook off: workers run this Python as it is
    os.environ.setdefault(*SCRIPTED_KEY)
    if not ray.is_initialized():
        # A Ray that an earlier test's run started and stopped in this process (the
        # orchestrator's `--backend ray` test, under its own isolated HOME) leaves its auth
        # token cached: the new instance's GCS, with this HOME's token, would refuse it.
        from ray._raylet import AuthenticationTokenLoader

        AuthenticationTokenLoader.instance().reset_cache()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "ray_test_plugin.py"
    path.write_text(PLUGIN)
    return path


PLUGIN = '''
import asyncio, os, signal
from pathlib import Path

import pandas as pd
from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions
from bashgym_testing import ScriptedExecutor


class Solve(Pipeline[PipelineOptions]):
    """Answers each seed task with the default model (a test pipeline)."""

    runner = "datadesigner"
    needs_seed = True

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(
            dd.LLMTextColumnConfig(name="solution", prompt="Solve: {{ task }}",
                                   model_alias="default")
        )
        return builder


class Agent(ScriptedExecutor):
    """Writes the prompt to out.txt; fails on `fail`; waits 1.5 s on `slow`; with a `together`
    folder beside the run dir, marks itself running there for 1 s and writes the pids of the
    tasks running at the end of it; counts its starts
    in a `starts` folder beside the run dir when there is one, and on `die` kills the process
    it runs in the first time (a Ray worker lost mid-task)."""

    async def run(self, task, options, ctx):
        marks = ctx.run.run_dir.absolute().parent / "starts"
        if marks.is_dir():
            mark = marks / task.id
            starts = int(mark.read_text()) + 1 if mark.exists() else 1
            mark.write_text(str(starts))
            if starts == 1 and "die" in task.prompt:
                os.kill(os.getpid(), signal.SIGKILL)
        if "slow" in task.prompt:
            await asyncio.sleep(1.5)
        together = ctx.run.run_dir.absolute().parent / "together"
        if together.is_dir():  # who runs beside whom: a file while running, pids seen
            mine = together / f"{task.id}.running"
            mine.write_text(str(os.getpid()))
            await asyncio.sleep(1.0)
            beside = sorted(p.read_text() for p in together.glob("*.running"))
            (together / f"{task.id}.saw").write_text(",".join(beside))
            mine.unlink()
        if "fail" in task.prompt:
            self.enqueue("gave up", status="failed", reason="tests fail")
        else:
            self.enqueue(f"did {task.prompt}", write={"out.txt": task.prompt})
        return await super().run(task, options, ctx)


@hookimpl
def register_pipelines(register):
    register("solve", Solve())


@hookimpl
def register_executors(register):
    register("agent", Agent())
'''
