"""A tiny Qwen2-architecture model and tokenizer built in the test (random weights, a byte-level
BPE trained on a few lines, a ChatML template): no download, trains in seconds on a CPU."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bashgym_trainers_trl import EXTRA

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "Write a function that adds two numbers.",
    "print('hello world')",
    "Fix the bug in the test: assert add(1, 2) == 3",
] * 20


def tiny_tokenizer(template: str = CHATML) -> Any:
    """A byte-level BPE trained on CORPUS, with ChatML's marks and `template`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()  # every byte: any text round-trips
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special, initial_alphabet=alphabet)
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        chat_template=template,
    )  # fmt: skip


def tiny_model(folder: Path, layers: int = 2) -> Path:
    """Save a tiny Qwen2 causal LM with its tokenizer in `folder`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    fast = tiny_tokenizer()
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=False, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
    )  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def fake_run(run_dir: Path, n: int = 8) -> Path:
    """A run dir as `bashgym run --sink nemo-jsonl` leaves it: run.json naming its JSONL."""
    sink = run_dir / "nemo-jsonl"
    sink.mkdir(parents=True)
    lines = [
        {"messages": [
            {"role": "system", "content": "You write Python."},
            {"role": "user", "content": f"Write a function that adds {i} to a number."},
            {"role": "assistant", "content": f"def add(a):\n    return a + {i}\n"},
        ]}
        for i in range(n)
    ]  # fmt: skip
    lines.append({"messages": [{"role": "user", "content": "no answer"}]})  # skipped, counted
    (sink / "train.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (sink / "val.jsonl").write_text(json.dumps(lines[0]) + "\n")
    paths = [str(sink / "train.jsonl"), str(sink / "val.jsonl")]
    (run_dir / "run.json").write_text(
        json.dumps({"status": "done", "outputs": {"nemo-jsonl": paths}})
    )
    return run_dir


@pytest.fixture(scope="session")
def make_tokenizer() -> Callable[..., Any]:
    """`make_tokenizer(template)`: a tiny fast tokenizer with that chat template."""
    return tiny_tokenizer


@pytest.fixture(scope="session")
def make_run() -> Callable[..., Path]:
    """`make_run(path, n=8)`: a run dir with n trainable conversations (and one bad line)."""
    return fake_run


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 model folder (skips, naming the extra, without torch)."""
    for module in ("torch", "transformers", "peft", "trl", "gguf"):
        pytest.importorskip(module, reason=f"{module} is not installed: {EXTRA}")
    return tiny_model(tmp_path_factory.mktemp("tiny") / "base")
