"""Settings layering (env > project toml > user toml), alias validation, secret masking."""

from __future__ import annotations

import pytest

from bashgym.settings import SettingsError, load_settings


def test_defaults_use_the_embedded_model(bashgym_env):
    settings = load_settings()
    assert settings.alias("default").provider == "embedded"
    assert settings.alias("anything-unlisted").provider == "embedded"


def test_layering_env_over_project_over_user(bashgym_env, monkeypatch):
    bashgym_env.user_config.parent.mkdir(parents=True)
    bashgym_env.user_config.write_text(
        'runs_dir = "user-runs"\ntelemetry = true\n'
        '[models.judge]\nprovider = "openai"\nmodel = "gpt-user"\napi_key_env = "OPENAI_API_KEY"\n'
    )
    (bashgym_env.workdir / "bashgym.toml").write_text(
        'runs_dir = "project-runs"\n[models.judge]\nmodel = "gpt-project"\n'
    )
    settings = load_settings()
    assert str(settings.runs_dir) == "project-runs"
    assert settings.telemetry is True  # only the user file sets it
    judge = settings.alias("judge")
    assert (judge.provider, judge.model, judge.api_key_env) == (
        "openai",
        "gpt-project",
        "OPENAI_API_KEY",
    )
    monkeypatch.setenv("BASHGYM_RUNS_DIR", "env-runs")
    assert str(load_settings().runs_dir) == "env-runs"


def test_api_key_must_be_an_env_var_name(bashgym_env):
    (bashgym_env.workdir / "bashgym.toml").write_text(
        '[models.x]\nprovider = "openai"\napi_key_env = "sk-live-1234567890abcdef=="\n'
    )
    with pytest.raises(SettingsError, match="NAME of an environment variable"):
        load_settings()


def test_bad_files_name_the_file(bashgym_env):
    path = bashgym_env.workdir / "bashgym.toml"
    path.write_text("runs_dir = [unclosed\n")
    with pytest.raises(SettingsError, match=r"bashgym\.toml.*not valid TOML"):
        load_settings()
    path.write_text("runs_dir = 5\n")  # pydantic: "Input is not a valid path for <class …>"
    with pytest.raises(SettingsError, match=r"runs_dir: must be a path, as text \(got 5\)$"):
        load_settings()
    path.write_text("no_such_setting = 1\n")
    with pytest.raises(SettingsError, match="no_such_setting: unknown setting"):
        load_settings()


def test_a_named_config_file_that_is_missing_is_an_error(bashgym_env, monkeypatch):
    """A typo in BASHGYM_CONFIG must not silently fall back to no settings at all."""
    (bashgym_env.workdir / "bashgym.toml").write_text('runs_dir = "project-runs"\n')
    monkeypatch.setenv("BASHGYM_CONFIG", str(bashgym_env.workdir / "bashgym.tmol"))
    with pytest.raises(SettingsError, match=r"BASHGYM_CONFIG names .*bashgym\.tmol.*not a file"):
        load_settings()
    empty = bashgym_env.workdir / "none.toml"
    empty.write_text("")  # how to read no project file: name an empty one
    monkeypatch.setenv("BASHGYM_CONFIG", str(empty))
    assert str(load_settings().runs_dir) != "project-runs"


def test_a_file_naming_only_the_judge_keeps_the_default_alias(bashgym_env, bashgym_cli):
    """`[models.judge]` alone replaced the whole models table: `default` vanished, so `validate`
    refused a pipeline's columns ("uses provider 'default', which is not a BashGym model alias")
    and `bashgym models` listed no default, though every unlisted alias still used it."""
    (bashgym_env.workdir / "bashgym.toml").write_text(
        '[models.judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
    )
    settings = load_settings()
    assert set(settings.models) == {"default", "judge"}
    assert settings.models["default"].provider == "embedded"
    assert settings.alias("judge").model == "gpt-4o-mini"
    listed = bashgym_cli("models")
    assert listed.exit_code == 0, listed.output
    assert any(line.split()[:2] == ["default", "embedded"] for line in listed.output.splitlines())
    (bashgym_env.workdir / "bashgym.toml").write_text(  # a default of the user's own still wins
        '[models.default]\nprovider = "openai"\nmodel = "gpt-4o"\n'
    )
    assert load_settings().alias("anything-unlisted").model == "gpt-4o"


def test_a_missing_required_value_is_said_in_words(bashgym_env):
    from pydantic import BaseModel, ValidationError

    from bashgym.text import explain_validation

    class Needs(BaseModel):
        path: str

    with pytest.raises(ValidationError) as exc:
        Needs.model_validate({})
    assert explain_validation(exc.value) == "path: required, and not given"
