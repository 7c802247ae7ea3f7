"""A PEFT LoRA folder written again as a llama.cpp LoRA GGUF (what `llama-server --lora` and
llama-cpp-python's `llama_adapter_lora_init` load).

Why not call llama.cpp's convert_lora_to_gguf.py: it is a script in llama.cpp's source tree, not
in any package, and it needs the base model's HF folder. What it does for a LoRA is small and
is done here with gguf-py's own parts: the tensor-name map of the base architecture turns each
PEFT module name (`model.layers.0.self_attn.q_proj`) into llama.cpp's (`blk.0.attn_q.weight`),
and each pair is written as `<name>.lora_a` (shape r x in) and `<name>.lora_b` (out x r), with
`general.type = adapter`, `adapter.type = lora` and `adapter.lora.alpha`: llama.cpp scales by
alpha / r exactly as PEFT does. Only numpy, safetensors and gguf are needed (no torch).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from bashgym.contracts import InputError

PEFT_PREFIX = "base_model.model."
WEIGHTS = "adapter_model.safetensors"


def _arch(model_type: str):  # -> gguf.MODEL_ARCH
    import gguf  # the `train` extra: imported where a GGUF is written

    for arch, name in gguf.MODEL_ARCH_NAMES.items():
        if name == model_type:
            return arch
    raise InputError(f"gguf-py knows no llama.cpp architecture named {model_type!r}")


def lora_pairs(weights: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """PEFT module name (`model.layers.0.self_attn.q_proj`) -> (A, B)."""
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, value in weights.items():
        name = key.removeprefix(PEFT_PREFIX)
        for part in ("lora_A", "lora_B"):
            marker = f".{part}."
            if marker in name:
                module = name.split(marker)[0]
                pairs.setdefault(module, {})[part] = value
                break
        else:
            raise InputError(f"{key!r} is not a LoRA weight (DoRA and extra trained modules are "
                             "not servable by llama.cpp's LoRA loader)")  # fmt: skip
    missing = [m for m, ab in pairs.items() if set(ab) != {"lora_A", "lora_B"}]
    if missing:
        raise InputError(f"LoRA weights without their A/B pair: {missing[:3]}")
    return {m: (ab["lora_A"], ab["lora_B"]) for m, ab in pairs.items()}


def write_lora_gguf(
    peft_dir: Path, out_path: Path, *, model_type: str, n_layers: int, name: str = "bashgym"
) -> dict[str, tuple[int, ...]]:
    """Write `peft_dir`'s LoRA as a llama.cpp LoRA GGUF at `out_path`; return each written
    tensor's numpy shape by GGUF name (what a test checks against the base model)."""
    import gguf

    config = json.loads((peft_dir / "adapter_config.json").read_text())
    if config.get("use_dora") or config.get("use_rslora"):
        raise InputError("llama.cpp serves plain LoRA only: train without DoRA / rsLoRA")
    alpha = float(config["lora_alpha"])
    if config.get("alpha_pattern") or config.get("rank_pattern"):
        raise InputError("per-module LoRA ranks or alphas are not servable by llama.cpp")
    tmap = gguf.get_tensor_name_map(_arch(model_type), n_layers)
    pairs = lora_pairs(load_file(str(peft_dir / WEIGHTS)))
    writer = gguf.GGUFWriter(str(out_path), arch=model_type)
    writer.add_string(gguf.Keys.General.TYPE, gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.General.NAME, name)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    shapes: dict[str, tuple[int, ...]] = {}
    for module, (a, b) in sorted(pairs.items()):
        base = tmap.get_name(f"{module}.weight", try_suffixes=(".weight",))
        if base is None:
            raise InputError(f"no llama.cpp tensor for the LoRA module {module!r} ({model_type})")
        for suffix, tensor in ((".lora_a", a), (".lora_b", b)):
            data = np.ascontiguousarray(tensor, dtype=np.float32)
            writer.add_tensor(base + suffix, data)
            shapes[base + suffix] = data.shape
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return shapes
