"""Settings: `BASHGYM_*` env vars over `./bashgym.toml` over the user's `bashgym.toml`.

pydantic-settings does the layering; this module only says where the files are and what the
settings mean. Model access is configured once here, as named aliases, and shared by every part
that calls a model. API keys are never stored: an alias names the env var that holds its key.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bashgym.records import Limit
from bashgym.text import explain_validation

CONFIG_NAME = "bashgym.toml"
ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Provider = Literal["embedded", "openai-compatible", "openai", "nvidia", "anthropic", "openrouter"]


def user_config_file() -> Path:
    """`$XDG_CONFIG_HOME/bashgym/bashgym.toml` (platformdirs picks the per-OS folder)."""
    return Path(platformdirs.user_config_dir("bashgym")) / CONFIG_NAME


def project_config_file() -> Path:
    """`$BASHGYM_CONFIG` if set, else `bashgym.toml` in the current directory."""
    return Path(os.environ.get("BASHGYM_CONFIG") or Path.cwd() / CONFIG_NAME)


def config_files() -> list[Path]:
    """Files read, lowest precedence first."""
    return [user_config_file(), project_config_file()]


class ModelAlias(BaseModel):
    """What a model alias (e.g. `default`, `judge`, `student`) points at."""

    model_config = ConfigDict(extra="forbid")

    provider: Provider = "embedded"
    model: str | None = Field(default=None, description="Model id at the provider.")
    endpoint: str | None = Field(default=None, description="Base URL, e.g. http://host:8000/v1.")
    api_key_env: str | None = Field(
        default=None, description="NAME of the env var holding the API key (never the key)."
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Inference parameters: temperature, max_tokens, ..."
    )

    @field_validator("api_key_env")
    @classmethod
    def _is_env_var_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_VAR_NAME.match(value):
            raise ValueError(
                "must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                "never the key itself"
            )
        return value


class ScrubSettings(BaseModel):
    """Secret scrubbing of seed rows, output rows and events (see `bashgym.scrubbing`)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Redact secrets before anything is written.")
    scrubbers: list[str] = Field(
        default_factory=lambda: ["secrets"], description="Scrubber plugins to run, in order."
    )
    allow: list[str] = Field(
        default_factory=list,
        description="Never redacted: literal strings, or regexes written 're:PATTERN'.",
    )

    @field_validator("allow")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for entry in value:
            if entry.startswith("re:"):
                try:
                    re.compile(entry[3:])
                except re.error as exc:
                    raise ValueError(f"{entry!r} is not a valid regex: {exc}") from None
        return value


class DesignerSettings(BaseModel):
    """How BashGym runs DataDesigner's `create()` (the `datadesigner` runner)."""

    model_config = ConfigDict(extra="forbid")

    buffer_size: int = Field(
        default=50,
        ge=1,
        description="Rows per checkpointed batch: a killed run loses at most the batches in "
        "flight; a resumed run must use the same value (run.json records it).",
    )
    max_concurrent_row_groups: int = Field(
        default=3, ge=1, description="Batches DataDesigner works on at once."
    )
    max_conversation_restarts: int = Field(
        default=5, ge=0, description="Fresh retries of a model call whose answer did not parse."
    )
    rate_limit_give_up_s: Limit = Field(
        default=120.0,
        description="Stop a run whose model answered no request this long (429, refused or "
        "lost connections, 5xx); finished batches are kept, the same command resumes it.",
    )


class Settings(BaseSettings):
    """Resolved BashGym settings; see `bashgym config show`."""

    model_config = SettingsConfigDict(
        env_prefix="BASHGYM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    runs_dir: Path = Field(default=Path("runs"), description="Where run directories go.")
    cache_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_cache_dir("bashgym")),
        description="Downloaded/assembled artifacts (e.g. the embedded model).",
    )
    models: dict[str, ModelAlias] = Field(
        default_factory=lambda: {"default": ModelAlias()},
        description="Model aliases; any alias not listed uses the embedded default.",
    )
    telemetry: bool = Field(default=False, description="Let libraries send usage telemetry.")
    scrub: ScrubSettings = Field(
        default_factory=ScrubSettings, description="Secret scrubbing before the sinks."
    )
    designer: DesignerSettings = Field(
        default_factory=DesignerSettings, description="DataDesigner batch and retry settings."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_files(), deep_merge=True)
        return (init_settings, env_settings, toml)

    def alias(self, name: str) -> ModelAlias:
        return self.models.get(name) or self.models.get("default") or ModelAlias()


class SettingsError(ValueError):
    """Settings could not be loaded: names the file or env var at fault."""


def load_settings(**overrides: Any) -> Settings:
    """Settings, or a SettingsError naming the bad file or key (never a raw traceback)."""
    for path in config_files():
        if path.is_file():
            try:
                tomllib.loads(path.read_text())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise SettingsError(
                    f"settings file {str(path)!r} is not valid TOML: {exc}"
                ) from None
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        files = [str(p) for p in config_files() if p.is_file()]
        where = f"settings files {files} or BASHGYM_* env vars" if files else "BASHGYM_* env vars"
        problems = explain_validation(exc, unknown="unknown setting")
        raise SettingsError(f"invalid settings in {where}: {problems}") from None
