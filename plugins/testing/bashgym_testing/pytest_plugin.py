"""pytest fixtures for BashGym and its plugins (auto-loaded through the `pytest11` entry point).

- `model_server`: a ScriptedModelServer on 127.0.0.1 (OpenAI + Anthropic APIs), reset per test.
- `bashgym_env`: an isolated HOME, config and cache dir, and working directory for one test.
- `bashgym_host`: a fresh plugin host (installed entry points) used by the CLI for one test.
- `register_plugin`: register a plugin object (module, class or instance) for one test.
- `bashgym_cli`: run `bashgym ...` in-process against that host and env; `.subprocess(...)`
  runs the real console script instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bashgym.contracts import RunContext
from bashgym.plugins import PluginHost, use_host
from bashgym.settings import load_settings
from bashgym_testing.models import models_for
from bashgym_testing.server import ScriptedModelServer

# the shared checks' asserts say what they compared, as a test's own do (before any imports them)
pytest.register_assert_rewrite("bashgym_testing.shards")


@pytest.fixture(scope="session")
def _model_server_session() -> Iterator[Any]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def model_server(_model_server_session: Any) -> Iterator[Any]:
    """A scripted OpenAI/Anthropic-compatible server; script, faults and records reset per test."""
    _model_server_session.reset()
    yield _model_server_session
    _model_server_session.reset()


@dataclass
class IsolatedEnv:
    root: Path
    home: Path
    config_dir: Path
    cache_dir: Path
    workdir: Path

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_dir),
            "XDG_CACHE_HOME": str(self.cache_dir),
            "XDG_DATA_HOME": str(self.root / "data"),
        }

    @property
    def user_config(self) -> Path:
        """Where the user-level bashgym.toml goes in this env."""
        return self.config_dir / "bashgym" / "bashgym.toml"


@pytest.fixture
def bashgym_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IsolatedEnv:
    """Isolated HOME/XDG dirs and cwd; BASHGYM_* variables of the outer shell are cleared."""
    iso = IsolatedEnv(
        tmp_path, tmp_path / "home", tmp_path / "config", tmp_path / "cache", tmp_path / "work"
    )
    for folder in (iso.home, iso.config_dir, iso.cache_dir, iso.workdir):
        folder.mkdir(parents=True, exist_ok=True)
    for name in [n for n in os.environ if n.startswith("BASHGYM_")]:
        monkeypatch.delenv(name)
    for name, value in iso.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(iso.workdir)
    return iso


@pytest.fixture
def bashgym_host() -> Iterator[PluginHost]:
    """A fresh plugin host, made current for the CLI during the test."""
    host = PluginHost()
    previous = use_host(host)
    yield host
    use_host(previous)


@pytest.fixture
def register_plugin(bashgym_host: PluginHost) -> Iterator[Any]:
    """`register_plugin(obj, name=None)` adds a plugin for this test only; returns its name.
    A plugin that is also installed is taken out of the host for the test."""

    def register(plugin: Any, name: str | None = None) -> str:
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        installed = bashgym_host.pm.get_name(plugin)
        if installed is not None:  # also installed (an entry point): the test's name wins
            bashgym_host.remove(installed)  # (the host is this test's own)
        bashgym_host.add(plugin, name)
        added.append(name)
        return name

    added: list[str] = []
    yield register
    for name in added:
        if name in bashgym_host.infos:
            bashgym_host.remove(name)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class CliRunner:
    """Runs `bashgym` commands in the isolated env, in-process or as a real subprocess."""

    def __init__(self, env: IsolatedEnv, host: PluginHost) -> None:
        self.env, self.host = env, host

    def __call__(self, *args: str, input: str | None = None) -> CliResult:
        # ~40 ms (Typer, the CLI; measured): this pytest11 plugin loads in every pytest run,
        # the CLI only for the tests that call it
        from bashgym_cli import build_app
        from typer.testing import CliRunner as TyperRunner

        result = TyperRunner().invoke(
            build_app(self.host), [str(a) for a in args], input=input, catch_exceptions=False
        )
        return CliResult(result.exit_code, result.stdout, result.stderr)

    def subprocess(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 300
    ) -> CliResult:
        exe = shutil.which("bashgym") or str(Path(sys.executable).with_name("bashgym"))
        full_env = {**os.environ, **self.env.env(), **(env or {})}
        proc = subprocess.run(
            [exe, *map(str, args)],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=self.env.workdir,
            timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def bashgym_cli(bashgym_env: IsolatedEnv, bashgym_host: PluginHost) -> CliRunner:
    return CliRunner(bashgym_env, bashgym_host)


@dataclass
class ScriptedModels:
    """The `default` and `judge` aliases pointed at the scripted server (via ./bashgym.toml)."""

    server: Any
    env: IsolatedEnv

    def settings(self) -> Any:
        return load_settings()

    def run_context(self, run_dir: Path | None = None, *, registry: Any = None) -> Any:
        """A RunContext whose model session resolves aliases to the scripted server.
        Close it with `ctx.models.close()` (or use it as `with ctx.models:`)."""
        settings = self.settings()
        run_dir = run_dir or self.env.root / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        models = models_for(settings, registry=registry)
        return RunContext(run_dir=run_dir, settings=settings, models=models)


SCRIPTED_ALIASES = ("default", "judge")


@pytest.fixture
def scripted_models(
    bashgym_env: IsolatedEnv, model_server: Any, monkeypatch: pytest.MonkeyPatch
) -> ScriptedModels:
    """Every model call of a run (generation and judging) goes to the `model_server` fixture:
    writes `[models.default]` and `[models.judge]` (openai-compatible) into ./bashgym.toml."""
    monkeypatch.setenv("BASHGYM_SCRIPTED_KEY", "scripted-key")
    lines = []
    for name in SCRIPTED_ALIASES:
        lines += [
            f"[models.{name}]",
            'provider = "openai-compatible"',
            f'model = "scripted-{name}"',
            f'endpoint = "{model_server.openai_base_url}"',
            'api_key_env = "BASHGYM_SCRIPTED_KEY"',
        ]
    (bashgym_env.workdir / "bashgym.toml").write_text("\n".join(lines) + "\n")
    return ScriptedModels(model_server, bashgym_env)
