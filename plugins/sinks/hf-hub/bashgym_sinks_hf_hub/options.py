"""What a user may write for the `hf-hub` sink (`--set sink.KEY=VALUE`).

Plain config, validated before any work starts and kept apart from the code that acts on it.
The token is never an option: only the *name* of the env var that holds it, so it can never end
up in run.toml, run.json or the dataset card.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bashgym.contracts import Options


class HfHubOptions(Options):
    path: str | None = Field(
        default=None,
        description="Dataset folder to write; default: RUN_DIR/hf-<run dir name> (two runs never "
        "load as one dataset from a shared HF cache).",
    )
    file_format: Literal["parquet", "jsonl"] = Field(
        default="parquet", description="Data files under data/: parquet or jsonl."
    )
    max_shard_rows: int = Field(
        default=10_000, ge=1, description="Rows per data file; more rows make more shards."
    )
    val_fraction: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of records in the validation split; with 2 or more rows neither split "
        "is left empty, with 1 (or 0 here) there is no validation split.",
    )
    tool_arguments: Literal["object", "openai-string"] = Field(
        default="object",
        description="Trace rows: tool_calls[].function.arguments as a JSON object (what TRL and "
        "HF chat templates render) or openai-string: JSON text, as OpenAI's format has it.",
    )
    success_only: bool = Field(
        default=True,
        description="Trace rows: only traces that succeeded are rows; a failed or errored one "
        "(e.g. a session ending on an API error) is dropped with its reason.",
    )
    include_trace: bool = Field(
        default=False,
        description="Trace rows: also keep the whole normalized Trace as JSON text in a `trace` "
        "column (lossless, so its local paths are whole, unlike the source_file and project "
        "columns; bashgym.records.trace_from_row reads it back).",
    )
    seed: int | None = Field(default=None, description="Split seed; default: the run's seed.")
    id_field: str | None = Field(
        default=None,
        description="Column with a stable record id; default: trace_id, id or record_id, "
        "else a hash of the row's content.",
    )
    pretty_name: str | None = Field(
        default=None, description="Card title; default: the repo id, else the run dir name."
    )
    license: str = Field(default="other", description="Hub license id for the card.")
    task_categories: list[str] | None = Field(
        default=None, description="Hub task categories; default: text-generation."
    )
    tags: list[str] = Field(
        default_factory=list,
        description="Extra tags (bashgym, synthetic and the format are added).",
    )
    repo_id: str | None = Field(
        default=None,
        description="Push to this Hub dataset repo (e.g. user/name); unset: dry run, folder only.",
    )
    token_env: str = Field(
        default="HF_TOKEN",
        description="Name of the env var holding the Hub token (never the token).",
    )
    private: bool = Field(default=True, description="Create the repo private if it is new.")
    commit_message: str | None = Field(default=None, description="Commit message for the push.")
