"""Settings: `BASHGYM_*` env vars over `./bashgym.toml` over the user's `bashgym.toml`.

pydantic-settings does the layering. Model aliases are configured once here and shared by every
caller; a key is never stored (an alias names its env var). A plugin owns its own table."""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic.functional_validators import AfterValidator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bashgym.text import explain_validation

CONFIG_NAME = "bashgym.toml"
ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Provider = Literal["embedded", "openai-compatible", "openai", "nvidia", "anthropic", "openrouter"]


def config_files() -> list[Path]:
    """Files read, lowest precedence first: the user's (platformdirs' per-OS config folder), then
    `$BASHGYM_CONFIG` if set, else `bashgym.toml` in the current directory."""
    project = os.environ.get("BASHGYM_CONFIG") or Path.cwd() / CONFIG_NAME
    return [Path(platformdirs.user_config_dir("bashgym")) / CONFIG_NAME, Path(project)]


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
    adapter: str | None = Field(default=None, description="A LoRA the runtime serves it with.")

    @field_validator("api_key_env")
    @classmethod
    def _is_env_var_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_VAR_NAME.match(value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                             "never the key itself")  # fmt: skip
        return value


# `default`, which any alias not listed uses, stays when a file's [models.judge] replaces the table
Aliases = Annotated[dict[str, ModelAlias], AfterValidator(lambda m: {"default": ModelAlias(), **m})]


class SettingsTable(BaseModel):
    """Base of a plugin's settings table (`[designer]`, `BASHGYM_DESIGNER__*`), registered with
    `register_settings`. `resume_keys`: fields a resumed run must keep. A run's own table is also
    validated with context {"run": True}: check the machine (a path is there) only then."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    table: ClassVar[str]
    resume_keys: ClassVar[tuple[str, ...]] = ()


T = TypeVar("T", bound=SettingsTable)


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
    models: Aliases = Field(
        default_factory=dict,
        description="Model aliases; any alias not listed uses `default` (the embedded model).",
    )
    telemetry: bool = Field(default=False, description="Let libraries send usage telemetry.")

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, **_: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:  # fmt: skip
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_files(), deep_merge=True)
        return (init_settings, env_settings, toml)

    def alias(self, name: str) -> ModelAlias:
        return self.models.get(name) or self.models["default"]

    def table(self, model: type[T]) -> T:
        """A plugin's settings table (its defaults when these settings were built without it)."""
        value = getattr(self, model.table, None)
        return value if isinstance(value, model) else model.model_validate(value or {})

    def tables(self) -> dict[str, SettingsTable]:
        """The plugin tables these settings were loaded with, by name."""
        return {k: v for k, v in self if isinstance(v, SettingsTable)}


@functools.cache
def settings_model(tables: tuple[tuple[str, type[SettingsTable]], ...] = ()) -> type[Settings]:
    """`Settings` with a field per plugin table, so pydantic-settings reads each from the files
    and env vars like a core setting and an unknown table or key is still an error."""
    if not tables:
        return Settings
    for name, _ in tables:
        if name in Settings.model_fields:
            raise SettingsError(f"a plugin registers the settings table {name!r}, a core setting")
    fields: Any = {
        n: (m, Field(default_factory=m, description=(m.__doc__ or "").split("\n")[0]))
        for n, m in tables
    }
    return create_model("Settings", __base__=Settings, **fields)


class SettingsError(ValueError):
    """Settings could not be loaded: names the file or env var at fault."""


def load_settings(
    tables: Mapping[str, type[SettingsTable]] | None = None, **overrides: Any
) -> Settings:
    """Settings with the plugins' `tables` (default: those of the process's plugin host), or a
    SettingsError naming the bad file or key (never a raw traceback)."""
    if tables is None:
        from bashgym.plugins import current_host  # the plugins load only when asked for

        tables = current_host().registry.settings_tables
    if (named := os.environ.get("BASHGYM_CONFIG")) and not Path(named).is_file():
        raise SettingsError(f"BASHGYM_CONFIG names {named!r}, which is not a file")
    for path in config_files():
        if path.is_file():
            try:
                tomllib.loads(path.read_text())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise SettingsError(
                    f"settings file {str(path)!r} is not valid TOML: {exc}"
                ) from None
    try:
        return settings_model(tuple(sorted((tables or {}).items())))(**overrides)
    except ValidationError as exc:
        files = [str(p) for p in config_files() if p.is_file()]
        where = f"settings files {files} or BASHGYM_* env vars" if files else "BASHGYM_* env vars"
        problems = explain_validation(exc, unknown="unknown setting")
        raise SettingsError(f"invalid settings in {where}: {problems}") from None
