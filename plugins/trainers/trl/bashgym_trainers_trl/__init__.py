"""BashGym trainer `trl`: LoRA SFT of the student with TRL and PEFT, on a run's chat / tool-use
JSONL; writes the adapter as a llama.cpp LoRA GGUF (embedded runtime) and a PEFT folder (vLLM).

`bashgym train RUN_DIR --trainer trl` runs it. torch, transformers, peft, trl and gguf are the
`train` extra (`pip install 'bashgym-trainers-trl[train]'`): this module imports none of them.
"""

from __future__ import annotations

from bashgym import hookimpl
from bashgym.hookspecs import Register
from bashgym_trainers_trl.data import Dataset, load_dataset
from bashgym_trainers_trl.options import TrlOptions
from bashgym_trainers_trl.trainer import ADAPTER_GGUF, ADAPTER_META, EXTRA, TrlTrainer

__all__ = ["ADAPTER_GGUF", "ADAPTER_META", "EXTRA", "Dataset", "TrlOptions", "TrlTrainer",
           "load_dataset"]  # fmt: skip


@hookimpl
def register_trainers(register: Register) -> None:
    register("trl", TrlTrainer())
