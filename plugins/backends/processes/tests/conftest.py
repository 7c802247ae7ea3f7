"""The test plugin the runs load with `--plugin` (a file, so worker processes load it too): a
seeded pipeline whose rows come from the scripted model, one that kills the worker process it
builds in when a seed row says `die`, and an agent executor."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "processes_test_plugin.py"
    path.write_text(PLUGIN)
    return path


PLUGIN = '''
import os, signal

from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions
from bashgym_testing import ScriptedExecutor


class Solve(Pipeline[PipelineOptions]):
    """Answers each seed task with the default model; a worker whose seed rows hold `die` is
    killed as it builds (the process it runs in: never run it without a backend), only the
    first time when PROCESSES_TEST_DIED names a file to mark it."""

    runner = "datadesigner"
    needs_seed = True

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config

        once = os.environ.get("PROCESSES_TEST_DIED")  # a file: die only while it is missing
        if seed is not None and seed["task"].str.contains("die").any():
            if once is None or not os.path.exists(once):
                if once is not None:
                    open(once, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(
            dd.LLMTextColumnConfig(name="solution", prompt="Solve: {{ task }}",
                                   model_alias="default")
        )
        return builder


class Agent(ScriptedExecutor):
    """Writes the prompt to out.txt and says which process it ran in."""

    async def run(self, task, options, ctx):
        self.enqueue(f"did {task.prompt} in {os.getpid()}", write={"out.txt": task.prompt})
        return await super().run(task, options, ctx)


@hookimpl
def register_pipelines(register):
    register("solve", Solve())


@hookimpl
def register_executors(register):
    register("agent", Agent())
'''
