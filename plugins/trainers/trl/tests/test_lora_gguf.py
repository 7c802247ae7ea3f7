"""The PEFT -> llama.cpp LoRA GGUF conversion, on a PEFT folder written here with numpy: names
from gguf-py's map, shapes as llama.cpp checks them (A: r x in, B: out x r), alpha kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bashgym.contracts import InputError

gguf = pytest.importorskip("gguf", reason="gguf is not installed: pip install "
                           "'bashgym-trainers-trl[train]'")  # fmt: skip
from bashgym_trainers_trl.lora_gguf import write_lora_gguf  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

HIDDEN, FF, R = 16, 24, 4


def peft_folder(folder: Path, **config: object) -> Path:
    folder.mkdir()
    weights = {}
    for layer in range(2):
        for module, (inp, out) in {"self_attn.q_proj": (HIDDEN, HIDDEN),
                                   "mlp.down_proj": (FF, HIDDEN)}.items():  # fmt: skip
            key = f"base_model.model.model.layers.{layer}.{module}"
            weights[f"{key}.lora_A.weight"] = np.full((R, inp), layer + 1, np.float32)
            weights[f"{key}.lora_B.weight"] = np.full((out, R), -1, np.float32)
    save_file(weights, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text(json.dumps({"r": R, "lora_alpha": 8, **config}))
    return folder


def test_names_shapes_and_alpha_are_what_llama_cpp_reads(tmp_path: Path) -> None:
    out = tmp_path / "adapter.gguf"
    write_lora_gguf(peft_folder(tmp_path / "p"), out, model_type="qwen2", n_layers=2)
    reader = gguf.GGUFReader(out)
    keys = ("general.type", "adapter.type", "adapter.lora.alpha", "general.architecture")
    fields = {k: reader.fields[k].contents() for k in keys}
    assert fields == {"general.type": "adapter", "adapter.type": "lora",
                      "adapter.lora.alpha": 8.0, "general.architecture": "qwen2"}  # fmt: skip
    tensors = {t.name: t for t in reader.tensors}
    assert sorted(tensors) == sorted(
        f"blk.{i}.{m}.weight.lora_{ab}" for i in range(2) for m in ("attn_q", "ffn_down")
        for ab in "ab"
    )  # fmt: skip
    # GGUF dims are numpy's reversed: ne = [in, r] for A and [r, out] for B, the base's [in, out]
    assert tensors["blk.1.ffn_down.weight.lora_a"].shape.tolist() == [FF, R]
    assert tensors["blk.1.ffn_down.weight.lora_b"].shape.tolist() == [R, HIDDEN]
    assert float(tensors["blk.1.attn_q.weight.lora_a"].data.flat[0]) == 2.0


def test_what_llama_cpp_cannot_serve_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="DoRA"):
        write_lora_gguf(peft_folder(tmp_path / "d", use_dora=True), tmp_path / "x.gguf",
                        model_type="qwen2", n_layers=2)  # fmt: skip
    with pytest.raises(InputError, match=r"no llama\.cpp architecture"):
        write_lora_gguf(peft_folder(tmp_path / "e"), tmp_path / "y.gguf",
                        model_type="not-a-model", n_layers=2)  # fmt: skip
