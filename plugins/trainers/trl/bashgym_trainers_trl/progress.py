"""A progress display for training: a tqdm bar on a terminal, plain lines otherwise, and the
loss points saved to loss.json at every log (a killed training keeps its curve)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from bashgym_trainers_trl.report import write_loss


class Progress(TrainerCallback):  # type: ignore[misc]
    def __init__(self, out_dir: Path, stream: Any = None) -> None:
        self.out_dir = out_dir
        self.stream = stream or sys.stderr
        self.bar: Any = None
        self.started = time.monotonic()

    @staticmethod
    def points(history: list[dict[str, Any]]) -> list[dict[str, float]]:
        keep = ("loss", "eval_loss", "learning_rate")
        return [
            {"step": h["step"], **{k: float(h[k]) for k in keep if k in h}}
            for h in history
            if "step" in h and any(k in h for k in ("loss", "eval_loss"))
        ]

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=state.max_steps, initial=state.global_step, unit="step",
                            desc="training", file=self.stream)  # fmt: skip
        else:
            print(f"training: {state.max_steps} steps (from step {state.global_step})",
                  file=self.stream, flush=True)  # fmt: skip

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
        write_loss(self.out_dir, self.points(state.log_history))
        logs = logs or {}
        if "loss" not in logs and "eval_loss" not in logs:
            return
        what = ", ".join(f"{k} {logs[k]:.4f}" for k in ("loss", "eval_loss") if k in logs)
        if self.bar is not None:
            self.bar.set_postfix_str(what)
        else:
            elapsed = time.monotonic() - self.started
            print(f"step {state.global_step}/{state.max_steps}  {what}  ({elapsed:.0f} s)",
                  file=self.stream, flush=True)  # fmt: skip

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.close()
