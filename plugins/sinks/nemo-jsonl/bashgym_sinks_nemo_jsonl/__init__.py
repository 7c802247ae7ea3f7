"""BashGym sink `nemo-jsonl`: NeMo / OpenAI-messages JSONL (chat SFT, tool-use SFT, DPO) with a
deterministic train/val split, so one run's output feeds NeMo Customizer, NeMo-RL or TRL as-is.

Public API (for sinks that write the same training lines in another container, as hf-hub
does): `NemoJsonlOptions`, `training_lines(row, shape, options)` (the lines one row becomes, or
`Invalid` with the drop reason; with `negatives` on, also a `NoNegative` for a dropped trace
whose negative line could not be made) and `NEGATIVE` (the key that marks a failed trace's
line)."""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.shapes import NEGATIVE, Invalid
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from bashgym_sinks_nemo_jsonl.sink import lines_of as training_lines

__all__ = ["NEGATIVE", "Invalid", "NemoJsonlOptions", "NemoJsonlSink", "training_lines"]


@hookimpl
def register_sinks(register: Any) -> None:
    register("nemo-jsonl", NemoJsonlSink())
