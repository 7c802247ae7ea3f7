"""The `[api]` settings table: where jobs live, who may call, and which origins a browser may
call from (`bashgym.toml` or `BASHGYM_API__*`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from bashgym.settings import ENV_VAR_NAME, SettingsTable


class ApiSettings(SettingsTable):
    """The HTTP API and dashboard (`bashgym api serve`)."""

    table: ClassVar[str] = "api"

    jobs_dir: Path | None = Field(
        default=None,
        description="Where job (run) directories go; default: RUNS_DIR/api (runs_dir setting).",
    )
    token_env: str | None = Field(
        default=None,
        description="NAME of the env var holding the API token (never the token itself); "
        "unset: a token is generated and printed when one is needed.",
    )
    require_token: bool = Field(
        default=False,
        description="Ask for the token on 127.0.0.1 too (a bind to any other address always does).",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins a browser may call the API from (CORS); empty: CORS is off.",
    )
    allow_plugin_files: bool = Field(
        default=False,
        description="Let a job's spec load .py plugin files from the server's disk "
        '(`plugins = ["x.py"]`): code execution for whoever may call the API.',
    )
    cancel_grace_s: float = Field(
        default=10.0, gt=0, le=600, description="Seconds between SIGTERM and SIGKILL of a job."
    )
    push_token_envs: list[str] = Field(
        default_factory=lambda: ["HF_TOKEN"],
        description="Env vars a push request's `token_env` may name (the server sends that "
        "variable's value to the Hub as the token): never any other of the server's variables.",
    )

    @field_validator("token_env")
    @classmethod
    def _is_env_var_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_VAR_NAME.match(value):
            raise ValueError("must be the NAME of an environment variable, never the token")
        return value

    @field_validator("push_token_envs")
    @classmethod
    def _are_env_var_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not ENV_VAR_NAME.match(name):
                raise ValueError(f"{name[:40]!r} is not the NAME of an environment variable")
        return value
