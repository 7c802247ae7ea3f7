"""`bashgym train --trainer trl` on a tiny Qwen2 model built here (CPU, a few steps): the adapter
in both forms, PEFT's loaded on the base, the GGUF's tensors against the base's, resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bashgym.contracts import InputError
from bashgym.settings import Settings

pytestmark = pytest.mark.slow  # the tiny model's training: ~25 s on 2 idle cores (imports)


@pytest.fixture(scope="module")
def trained(tiny_base: Path, tmp_path_factory: pytest.TempPathFactory, make_run) -> Path:
    """OUT of one training through the CLI: 4 steps, checkpoints every 2."""
    from bashgym_cli import build_app
    from typer.testing import CliRunner

    from bashgym.plugins import PluginHost, use_host

    root = tmp_path_factory.mktemp("train")
    run = make_run(root / "run")
    host = PluginHost()
    previous = use_host(host)
    try:
        result = CliRunner().invoke(build_app(host), [
            "train", str(run), "--out", str(root / "out"), "--set", f"trainer.base={tiny_base}",
            "--set", "trainer.max_steps=4", "--set", "trainer.save_steps=2",
            "--set", "trainer.grad_accum=2", "--set", "trainer.learning_rate=0.01",
        ])  # fmt: skip
    finally:
        use_host(previous)
    assert result.exit_code == 0, result.output
    assert "step 4/4" in result.stderr and "adapter" in result.stdout
    return root / "out"


def test_the_adapter_is_written_in_both_forms(trained: Path) -> None:
    adapter = trained / "adapter"
    names = {p.name for p in adapter.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "adapter.gguf",
            "bashgym-adapter.json"} <= names  # fmt: skip
    metrics = json.loads((trained / "metrics.json").read_text())
    assert metrics["steps"] == 4 and metrics["train_rows"] == 8
    assert metrics["skipped_lines"] == {"last message is not the assistant's": 1}
    points = json.loads((trained / "loss.json").read_text())
    assert [p["step"] for p in points if "loss" in p] == [1, 2, 3, 4]
    assert "<polyline" in (trained / "report.html").read_text()


def test_peft_loads_the_folder_and_it_changes_the_model(trained: Path, tiny_base: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_base)
    ids = torch.tensor([[1, 2, 3, 4]])
    before = base(ids).logits
    tuned = PeftModel.from_pretrained(base, trained / "adapter")
    after = tuned(ids).logits
    assert not torch.allclose(before, after)  # a trained B is not zero


def test_gguf_tensors_fit_the_bases_weights(trained: Path, tiny_base: Path) -> None:
    """What llama.cpp checks on load: each `<base>.lora_a` is r x in and `.lora_b` out x r of
    a base tensor the name map gives for the architecture."""
    import gguf
    from safetensors.numpy import load_file

    base = load_file(str(tiny_base / "model.safetensors"))
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, 2)
    base_shapes = {tmap.get_name(k, try_suffixes=(".weight",)): v.shape for k, v in base.items()}
    reader = gguf.GGUFReader(trained / "adapter" / "adapter.gguf")
    rank = json.loads((trained / "adapter" / "adapter_config.json").read_text())["r"]
    names = [t.name for t in reader.tensors]
    assert len(names) == 2 * 7 * 2  # 7 linear modules per layer, 2 layers, A and B
    for t in reader.tensors:
        target, part = t.name.rsplit(".", 1)
        out_f, in_f = base_shapes[target]
        expected = [in_f, rank] if part == "lora_a" else [rank, out_f]
        assert t.shape.tolist() == expected, t.name


def test_a_killed_training_resumes_from_its_checkpoint(
    trained: Path, tiny_base: Path, tmp_path: Path, make_run
) -> None:
    from bashgym_trainers_trl import TrlOptions, TrlTrainer

    out = tmp_path / "out"
    shutil.copytree(trained, out)
    # as if killed after step 2's checkpoint: no checkpoint-4, no adapter
    shutil.rmtree(out / "checkpoints" / "checkpoint-4")
    shutil.rmtree(out / "adapter")
    run = make_run(tmp_path / "run")  # the same rows
    options = TrlOptions(base=str(tiny_base), max_steps=4, save_steps=2, grad_accum=2,
                         learning_rate=0.01)  # fmt: skip
    result = TrlTrainer().train(run, out, options, Settings())
    assert result.metrics["resumed_from_step"] == 2 and result.metrics["steps"] == 4
    assert (result.adapter / "adapter.gguf").is_file()
    with pytest.raises(InputError, match="other data or options"):
        TrlTrainer().train(run, out, options.model_copy(update={"rank": 4}), Settings())
