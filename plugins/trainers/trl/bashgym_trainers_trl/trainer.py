"""The `trl` Trainer: LoRA SFT of the student with TRL's SFTTrainer and PEFT.

What it writes under OUT: `checkpoints/` (every `save_steps`, so a killed training resumes where
it was: the same command again), `loss.json` and `report.html` (the loss curve), and `adapter/`,
the result in both forms a runtime serves: a PEFT folder (`adapter_config.json`,
`adapter_model.safetensors`: vLLM's `--lora-modules`) and `adapter.gguf` (llama.cpp's `--lora`:
the embedded runtime), with `bashgym-adapter.json` naming the base both were trained on.
torch, transformers, peft and trl are the `train` extra: imported only here, when a training
runs, so the plugin costs nothing in a default install.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError, Trained, Trainer
from bashgym.settings import Settings
from bashgym_trainers_trl.base import find_base, load
from bashgym_trainers_trl.data import load_dataset
from bashgym_trainers_trl.lora_gguf import write_lora_gguf
from bashgym_trainers_trl.options import TrlOptions
from bashgym_trainers_trl.render import render
from bashgym_trainers_trl.report import write_loss, write_report

EXTRA = "pip install 'bashgym-trainers-trl[train]'"
ADAPTER_META = "bashgym-adapter.json"
ADAPTER_GGUF = "adapter.gguf"
# options that do not change what is learned: a resume may change them
NOT_IDENTITY = {"save_steps", "device", "threads"}


def require_extra() -> None:
    """InputError naming the extra when the training libraries are missing."""
    missing = []
    for module in ("torch", "transformers", "peft", "trl", "datasets", "gguf"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise InputError(f"training needs {', '.join(missing)}: {EXTRA}")


def identity(options: TrlOptions, files: list[Path]) -> str:
    """What a checkpoint was trained on: options and data; a resume must match it."""
    digest = hashlib.sha256()
    digest.update(json.dumps(options.model_dump(exclude=NOT_IDENTITY), sort_keys=True).encode())
    for path in sorted(files):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def check_resume(out_dir: Path, ident: str) -> Path | None:
    """The checkpoint to resume from (None: a fresh start), or InputError when OUT holds the
    training of other data or options."""
    marker = out_dir / "train-identity.json"
    checkpoints = sorted(
        (out_dir / "checkpoints").glob("checkpoint-*"),
        key=lambda p: int(p.name.rsplit("-", 1)[1]) if p.name.rsplit("-", 1)[1].isdigit() else -1,
    )
    if marker.is_file():
        before = json.loads(marker.read_text()).get("identity")
        if before != ident and checkpoints:
            raise InputError(
                f"{out_dir} holds checkpoints of a training with other data or options; "
                "name a new --out (or delete it to start over)"
            )
    marker.write_text(json.dumps({"identity": ident}))
    usable = [c for c in checkpoints if (c / "trainer_state.json").is_file()]
    return usable[-1] if usable else None


class TrlTrainer(Trainer[TrlOptions]):
    """LoRA SFT with TRL on the run's chat / tool-use JSONL; a GGUF and a PEFT adapter."""

    def train(
        self, run_dir: Path, out_dir: Path, options: TrlOptions, settings: Settings
    ) -> Trained:
        data = load_dataset(run_dir)
        require_extra()
        out_dir.mkdir(parents=True, exist_ok=True)
        resume = check_resume(out_dir, identity(options, data.files))
        return _fit(data, out_dir, options, settings, resume)


def _fit(
    data: Any, out_dir: Path, options: TrlOptions, settings: Settings, resume: Path | None
) -> Trained:
    import datasets
    import torch
    from peft import LoraConfig
    from transformers import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from bashgym_trainers_trl.progress import Progress

    if options.threads:
        torch.set_num_threads(options.threads)
    cuda = options.device == "cuda" or (options.device == "auto" and torch.cuda.is_available())
    if options.device == "cuda" and not torch.cuda.is_available():
        raise InputError("trainer.device=cuda, but torch sees no CUDA device")
    base = find_base(options.base, settings)
    say(f"loading the base model {base.model_id} ({'cuda' if cuda else 'cpu'})")
    started = time.monotonic()
    model, tok = load(base, settings, torch.bfloat16 if cuda else torch.float32)
    say(f"loaded in {time.monotonic() - started:.0f} s")
    datasets.disable_progress_bars()  # one display: ours
    train = render(data.train, tok, options.loss, options.max_length)
    val_rows = (
        render(data.validation, tok, options.loss, options.max_length).rows
        if data.validation
        else []
    )
    if train.cut_off:
        say(f"{train.cut_off} conversations left out: no assistant token before "
            f"trainer.max_length={options.max_length}")  # fmt: skip
    if train.cut_short:
        say(f"{train.cut_short} of {len(train.rows)} conversations lose later assistant turns "
            f"past trainer.max_length={options.max_length} (the student will not learn how "
            "they end): raise trainer.max_length")  # fmt: skip
    if not train.rows:
        raise InputError(
            f"no training example is left once cut to trainer.max_length={options.max_length} "
            "tokens (the answers fall past the cut): raise trainer.max_length"
        )
    if train.whole and options.loss == "completion":
        say(f"{train.whole} of {len(train.rows)} conversations train on every token (their "
            "template's renderings are not prefixes of each other)")  # fmt: skip
    args = SFTConfig(
        output_dir=str(out_dir / "checkpoints"),
        num_train_epochs=options.epochs,
        max_steps=options.max_steps or -1,
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum,
        learning_rate=options.learning_rate,
        max_length=options.max_length,
        logging_steps=1,
        save_strategy="steps",
        save_steps=options.save_steps,
        save_total_limit=2,
        eval_strategy="steps" if val_rows else "no",
        eval_steps=options.save_steps,
        report_to="none",
        disable_tqdm=True,
        use_cpu=not cuda,
        bf16=cuda,
        seed=options.seed,
        data_seed=options.seed,
        dataloader_num_workers=0,
        gradient_checkpointing=options.gradient_checkpointing,
    )
    lora = LoraConfig(
        r=options.rank, lora_alpha=options.alpha, lora_dropout=options.dropout,
        target_modules=options.target_modules, bias="none", task_type="CAUSAL_LM",
    )  # fmt: skip
    progress = Progress(out_dir)
    trainer = SFTTrainer(
        model=model, args=args, processing_class=tok, peft_config=lora, callbacks=[progress],
        train_dataset=datasets.Dataset.from_list(train.rows),
        eval_dataset=datasets.Dataset.from_list(val_rows) if val_rows else None,
    )  # fmt: skip
    trainer.remove_callback(PrinterCallback)  # our Progress prints each step once
    if resume:
        say(f"resuming from {resume.name}")
    result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    adapter = save_adapter(trainer.model, out_dir, base, model.config)
    points = progress.points(trainer.state.log_history)
    write_loss(out_dir, points)
    losses = [p["loss"] for p in points if "loss" in p]
    evals = [p["eval_loss"] for p in points if "eval_loss" in p]
    metrics: dict[str, Any] = {
        "base": base.model_id,
        "device": "cuda" if cuda else "cpu",
        "train_rows": len(train.rows),
        "validation_rows": len(val_rows),
        "skipped_lines": dict(data.skipped),
        "steps": trainer.state.global_step,
        "resumed_from_step": int(resume.name.rsplit("-", 1)[1]) if resume else None,
        "first_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "eval_loss": evals[-1] if evals else None,
        "train_runtime_s": round(float(result.metrics.get("train_runtime", 0.0)), 1),
        "loss_on": train.loss_on,
        "rows_with_loss_on_every_token": train.whole,
        "rows_cut_off": train.cut_off,
        "rows_cut_short": train.cut_short,
    }
    report = write_report(out_dir, points, metrics)
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    return Trained(adapter=adapter, metrics=metrics, report=report)


def save_adapter(peft_model: Any, out_dir: Path, base: Any, config: Any) -> Path:
    """OUT/adapter: the PEFT folder plus its llama.cpp GGUF, written aside and renamed."""
    final = out_dir / "adapter"
    tmp = out_dir / "adapter.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    peft_model.save_pretrained(tmp)
    shapes = write_lora_gguf(
        tmp, tmp / ADAPTER_GGUF, model_type=config.model_type, n_layers=config.num_hidden_layers
    )
    lora = json.loads((tmp / "adapter_config.json").read_text())
    meta = {
        "base": base.model_id,
        "base_gguf": str(base.gguf) if base.gguf else None,
        "hf_base": base.hf_id,
        "gguf": ADAPTER_GGUF,
        "rank": lora["r"],
        "alpha": lora["lora_alpha"],
        "tensors": len(shapes),
    }
    (tmp / ADAPTER_META).write_text(json.dumps(meta, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def say(text: str) -> None:
    print(f"bashgym train: {text}", file=sys.stderr, flush=True)
