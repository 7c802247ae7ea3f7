"""The trl trainer's options (`--set trainer.KEY=VALUE`), defaults sized for a 0.5B model on CPU."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bashgym.contracts import Options

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class TrlOptions(Options):
    """LoRA SFT with TRL's SFTTrainer; the base is the embedded student unless `base` says."""

    base: str | None = Field(
        default=None,
        description="Base model: a .gguf file, or a Hugging Face model folder (config.json, "
        "safetensors, tokenizer); default: the embedded student (Qwen2.5-Coder-0.5B GGUF).",
    )
    epochs: float = Field(default=1.0, gt=0, description="Passes over the training rows.")
    max_steps: int | None = Field(
        default=None, ge=1, description="Stop after this many optimizer steps (overrides epochs)."
    )
    learning_rate: float = Field(
        default=2e-4,
        gt=0,
        description="AdamW's learning rate at the first step; it falls linearly to 0 by the "
        "last (TRL's default schedule).",
    )
    batch_size: int = Field(default=1, ge=1, description="Conversations per device step.")
    grad_accum: int = Field(default=4, ge=1, description="Device steps per optimizer step.")
    max_length: int = Field(
        default=2048,
        ge=16,
        description="Tokens per conversation (cut); tool-use lines carry the tools' schemas "
        "(~900 tokens for the student's six).",
    )
    rank: int = Field(default=8, ge=1, description="LoRA rank r.")
    alpha: float = Field(default=16.0, gt=0, description="LoRA alpha (scale = alpha / r).")
    dropout: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description="LoRA dropout: the share of each LoRA layer's inputs zeroed in training.",
    )
    target_modules: list[str] = Field(
        default_factory=lambda: list(ALL_LINEAR),
        description="Linear layers that get a LoRA (llama.cpp maps each to its GGUF tensor).",
    )
    loss: Literal["completion", "all"] = Field(
        default="completion",
        description="completion: loss on the assistant's turns only (its answers and tool "
        "calls, each through its end-of-turn mark), not on the system prompt, tool schemas, "
        "the user's task or the tools' results; all: every token of every conversation.",
    )
    gradient_checkpointing: bool = Field(
        default=False,
        description="Recompute activations in the backward pass: less memory, ~30% more time "
        "(TRL's default is on; off here, sized for short conversations on CPU).",
    )
    save_steps: int = Field(default=10, ge=1, description="Checkpoint every N steps (resume).")
    seed: int = Field(
        default=0,
        description="Seed of the training's randomness: row order and dropout (TRL's seed "
        "and data_seed).",
    )
    device: str = Field(default="auto", description="auto (CUDA when present), cpu or cuda.")
    threads: int | None = Field(default=None, ge=1, description="CPU threads for torch.")
