"""BashGym trainer `nemo-customizer`: the run's chat / tool-use JSONL uploaded to the NeMo Data
Store (its Hugging Face Hub API), a NeMo Customizer job created, polled and reported.

`bashgym train RUN_DIR --trainer nemo-customizer --set trainer.url=http://nemo.test
--set trainer.config=meta/llama-3.2-1b-instruct@v1.0.0+A100`.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym.hookspecs import Register
from bashgym_trainers_nemo_customizer.client import NemoAuthError, NemoJobFailed
from bashgym_trainers_nemo_customizer.options import NemoCustomizerOptions
from bashgym_trainers_nemo_customizer.trainer import NemoCustomizerTrainer

__all__ = ["NemoAuthError", "NemoCustomizerOptions", "NemoCustomizerTrainer", "NemoJobFailed"]


@hookimpl
def register_trainers(register: Register) -> None:
    register("nemo-customizer", NemoCustomizerTrainer())
