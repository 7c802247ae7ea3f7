"""The nemo-customizer trainer's options (`--set trainer.KEY=VALUE`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from bashgym.contracts import Options
from bashgym.settings import ENV_VAR_NAME


class NemoCustomizerOptions(Options):
    """Where NeMo's services answer, which customization config to run, and its hyperparameters."""

    url: str = Field(description="NeMo Customizer's base URL, e.g. http://nemo.test.")
    datastore_url: str | None = Field(
        default=None,
        description="NeMo Data Store's base URL (default: url); its HF API is DATASTORE/v1/hf.",
    )
    entity_store_url: str | None = Field(
        default=None, description="NeMo Entity Store's base URL (default: url)."
    )
    api_key_env: str | None = Field(
        default=None, description="NAME of the env var holding the bearer token (never the token)."
    )
    config: str = Field(
        description="Customization config, e.g. meta/llama-3.2-1b-instruct@v1.0.0+A100."
    )
    namespace: str = Field(default="bashgym", description="Namespace of the dataset and model.")
    dataset: str | None = Field(
        default=None, description="Dataset name (default: bashgym-RUN_DIR_NAME)."
    )
    output_model: str | None = Field(
        default=None, description="namespace/name@version of the result (default: NeMo's)."
    )
    finetuning_type: Literal["lora", "all_weights"] = Field(
        default="lora",
        description="lora: train a LoRA adapter of rank adapter_dim on the frozen base; "
        "all_weights: train every weight of the base (a full model, not an adapter).",
    )
    training_type: Literal["sft"] = Field(
        default="sft",
        description="sft: supervised fine-tuning on the run's chat rows (the one kind sent).",
    )
    epochs: int = Field(
        default=1, ge=1, description="Passes over the training rows (hyperparameters.epochs)."
    )
    batch_size: int = Field(
        default=8,
        ge=1,
        description="Conversations per optimizer step (hyperparameters.batch_size).",
    )
    learning_rate: float = Field(
        default=1e-4,
        gt=0,
        description="The optimizer's learning rate (hyperparameters.learning_rate).",
    )
    adapter_dim: int = Field(default=16, ge=1, description="LoRA rank (hyperparameters.lora).")
    poll_s: float = Field(default=30.0, gt=0, description="Seconds between status checks.")
    timeout_s: float = Field(
        default=86_400.0,
        gt=0,
        description="Give up waiting after this long (the job goes on; "
        "the same command again keeps polling it).",
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_VAR_NAME.match(value):
            raise ValueError("must be the NAME of an environment variable, never the key itself")
        return value
