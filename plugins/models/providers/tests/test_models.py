"""Model aliases → litellm, for every provider type, against the scripted server.

Each provider type is exercised through the real client (litellm) with its endpoint overridden to
127.0.0.1, so the request path, the credential header and the model id it sends are checked, not
assumed. The embedded path uses a fake Runtime that "serves" the scripted server and records
start/stop, so auto-start and auto-stop are observable. (DataDesigner through each provider, and
a `bashgym run` that starts and stops the embedded runtime: plugins/designer/tests/test_models.py.)
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from bashgym_models_providers import PROVIDERS, MissingKeyError, ModelError, ModelSession
from bashgym_testing import RecordingRuntime
from bashgym_testing.server import Fault, Reply

from bashgym import hookimpl
from bashgym.settings import ModelAlias, Settings

SECRET = "sk-scripted-secret-value"
HI = [{"role": "user", "content": "hi"}]


def write_models(workdir: Path, models: dict[str, dict[str, Any]]) -> None:
    """A project bashgym.toml holding `models`."""
    lines = []
    for name, alias in models.items():
        lines.append(f"[models.{name}]")
        for key, value in alias.items():
            if key != "params":
                lines.append(f"{key} = {json.dumps(value)}")
        if alias.get("params"):
            lines.append(f"[models.{name}.params]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in alias["params"].items()]
    (workdir / "bashgym.toml").write_text("\n".join(lines) + "\n")


def remote_alias(provider: str, server: Any, **extra: Any) -> dict[str, Any]:
    """An alias of `provider` pointed at the scripted server, key in the provider's default var."""
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    alias = {"provider": provider, "model": f"{provider}-model", "endpoint": base}
    if provider == "openai-compatible":
        alias["api_key_env"] = "LOCAL_LLM_KEY"
    return {**alias, **extra}


def key_var(provider: str) -> str:
    return PROVIDERS[provider].key_env or "LOCAL_LLM_KEY"


REMOTE = ["openai-compatible", "openai", "nvidia", "openrouter", "anthropic"]


class RuntimePlugin:
    def __init__(self, runtime: RecordingRuntime) -> None:
        self.runtime = runtime

    @hookimpl
    def register_runtimes(self, register: Any) -> None:
        register("embedded", self.runtime)


# ---------------------------------------------------------------------------------------------
# The table


@pytest.mark.parametrize(
    ("provider", "endpoint", "key", "prefix"),
    [
        ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "openai"),
        ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "anthropic"),
        ("nvidia", "https://integrate.api.nvidia.com/v1", "NVIDIA_API_KEY", "nvidia_nim"),
        ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openrouter"),
    ],
)
def test_provider_defaults_feed_the_model_and_litellm(monkeypatch, provider, endpoint, key, prefix):
    monkeypatch.setenv(key, SECRET)
    settings = Settings(models={"m": ModelAlias(provider=provider, model="x-1")})
    with ModelSession(settings) as models:
        model = models.resolve("m")
        kwargs = model._litellm_kwargs()
    assert (model.alias, model.model, model.endpoint) == ("m", "x-1", endpoint)
    assert model.api_key_env == key  # the NAME: a runner's own client reads the variable itself
    assert model.served is False
    assert kwargs["model"] == f"{prefix}/x-1"
    assert (kwargs["api_base"], kwargs["api_key"]) == (endpoint, SECRET)


def test_missing_key_is_named_and_never_sent(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings(models={"judge": ModelAlias(provider="openai", model="gpt-x")})
    with ModelSession(settings) as models:
        judge = models.resolve("judge")
        for use in (judge._litellm_kwargs, lambda: asyncio.run(judge.acomplete(HI, retries=0))):
            with pytest.raises(
                MissingKeyError, match="set the environment variable OPENAI_API_KEY"
            ):
                use()


def test_endpoint_and_model_are_required_where_there_is_no_default():
    settings = Settings(
        models={
            "local": ModelAlias(provider="openai-compatible", model="m"),
            "bare": ModelAlias(provider="openai", endpoint="http://127.0.0.1:1/v1"),
        }
    )
    with ModelSession(settings) as models:
        with pytest.raises(ModelError, match=r"needs an endpoint.*models\.local\.endpoint"):
            models.resolve("local")
        with pytest.raises(ModelError, match=r"needs a model id.*models\.bare\.model"):
            models.resolve("bare")


def test_params_split_between_litellm_arguments_and_the_request_body(monkeypatch):
    monkeypatch.setenv("K", SECRET)
    params = {"temperature": 0.2, "max_tokens": 64, "timeout": 0.5, "seed": 7, "extra_body": {}}
    params |= {"max_parallel_requests": 8}
    alias = ModelAlias(
        provider="openai-compatible",
        model="m",
        endpoint="http://h/v1/",
        api_key_env="K",
        params=params,
    )
    with ModelSession(Settings(models={"a": alias})) as models:
        kwargs = models.resolve("a")._litellm_kwargs()
    # max_parallel_requests is a client's concurrency limit: never in the request
    assert kwargs == {
        "model": "openai/m",
        "api_base": "http://h/v1",
        "api_key": SECRET,
        "temperature": 0.2,
        "max_tokens": 64,
        "timeout": 0.5,
        "extra_body": {"seed": 7},
    }


def test_keyless_endpoint_never_falls_back_to_openai_key(monkeypatch, model_server):
    """Without an explicit key the OpenAI client would send $OPENAI_API_KEY to a local server."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    alias = ModelAlias(
        provider="openai-compatible", model="m", endpoint=model_server.openai_base_url
    )
    with ModelSession(Settings(models={"local": alias})) as models:
        local = models.resolve("local")
        assert local.api_key_env is None
        asyncio.run(local.acomplete(HI, retries=0))
    assert model_server.completions[-1].api_key != SECRET


# ---------------------------------------------------------------------------------------------
# litellm, directly


@pytest.mark.parametrize("provider", REMOTE)
def test_litellm_call_through_each_provider(monkeypatch, model_server, provider):
    monkeypatch.setenv(key_var(provider), SECRET)
    model_server.script(Reply("pong"))
    alias = ModelAlias.model_validate(remote_alias(provider, model_server))
    with ModelSession(Settings(models={"a": alias})) as models:
        ping = [{"role": "user", "content": "ping"}]
        reply = asyncio.run(models.resolve("a").acomplete(ping, params={"max_tokens": 5}))
    assert reply.message["content"] == "pong"
    (request,) = model_server.completions
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    assert (request.path, request.model, request.api_key) == (path, f"{provider}-model", SECRET)
    assert request.body["max_tokens"] == 5


def test_session_stops_runtimes_on_keyboard_interrupt_and_shares_one_server(model_server):
    runtime = RecordingRuntime(model_server.openai_base_url)

    class Registry:
        def get(self, kind: str, name: str) -> Any:
            assert (kind, name) == ("runtimes", "embedded")
            return type("Registered", (), {"obj": runtime})()

    settings = Settings(models={"default": ModelAlias(), "judge": ModelAlias()})
    with pytest.raises(KeyboardInterrupt), ModelSession(settings, Registry()) as models:  # type: ignore[arg-type]
        assert runtime.events == []  # lazily: nothing starts before first use
        assert models.resolve("default").endpoint == model_server.openai_base_url
        assert models.resolve("judge").model == "fake"
        assert models.resolve("default")._litellm_kwargs()["api_key"] == "no-key"
        raise KeyboardInterrupt
    assert runtime.events == ["start", "stop"]  # two identical aliases, one server


# ---------------------------------------------------------------------------------------------
# `bashgym models` and `bashgym models check`


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_models_lists_aliases_and_whether_keys_are_set(bashgym_cli, bashgym_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    write_models(
        bashgym_env.workdir,
        {
            "default": {"provider": "embedded"},
            "teacher": {"provider": "openai", "model": "gpt-x"},
            "judge": {"provider": "anthropic", "model": "claude-x"},
        },
    )
    result = bashgym_cli("models", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["alias"]: r for r in json.loads(result.stdout)}
    assert rows["teacher"] == {
        "alias": "teacher",
        "provider": "openai",
        "model": "gpt-x",
        "endpoint": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "missing": [],
        "api_key_set": True,
    }
    assert rows["judge"]["api_key_set"] is False
    assert rows["default"]["api_key_env"] is None
    assert rows["default"]["missing"] == []  # the runtime serves it: nothing to set

    # wide enough for the table (a process of its own: the CLI's console reads COLUMNS once)
    table = bashgym_cli.subprocess("models", env={"COLUMNS": "200", "OPENAI_API_KEY": SECRET})
    assert table.exit_code == 0
    first_line = {line.split()[1]: line for line in table.stdout.splitlines() if "│" in line}
    assert "yes" in first_line["teacher"] and " NO " in first_line["judge"]
    assert "OPENAI_API_KEY" in first_line["teacher"]
    assert SECRET not in table.output + result.output


def test_models_check_reports_each_failure_in_one_line(
    bashgym_cli, bashgym_env, model_server, monkeypatch
):
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    model_server.add_rule(lambda r: r.model == "denied", Fault.status(401))
    model_server.add_rule(lambda r: r.model == "gone", Fault.status(404))
    model_server.add_rule(lambda r: r.model == "slow", Fault.timeout(3))
    local = remote_alias("openai-compatible", model_server)
    write_models(
        bashgym_env.workdir,
        {
            "good": local,
            "claude": remote_alias("anthropic", model_server),
            "nokey": remote_alias("openrouter", model_server),
            "denied": {**local, "model": "denied"},
            "gone": {**local, "model": "gone"},
            "refused": {**local, "endpoint": f"http://127.0.0.1:{closed_port()}/v1"},
            "slow": {**local, "model": "slow", "params": {"timeout": 1}},
        },
    )

    result = bashgym_cli("models", "check")

    assert result.exit_code == 1
    lines = {line.split(":", 1)[0].split()[-1]: line for line in result.stdout.splitlines()}
    assert lines["good"].startswith("ok") and lines["good"].endswith("s")
    assert lines["claude"].startswith("ok")
    assert "set the environment variable OPENROUTER_API_KEY" in lines["nokey"]
    assert "401 unauthorized" in lines["denied"] and "LOCAL_LLM_KEY" in lines["denied"]
    assert "404 not found: model 'gone'" in lines["gone"]
    assert "connection refused at http://127.0.0.1:" in lines["refused"]
    assert "timed out after 1s" in lines["slow"]
    assert all(lines[n].startswith("FAIL") for n in ("nokey", "denied", "gone", "refused", "slow"))
    assert "Traceback" not in result.output and SECRET not in result.output
    assert len(result.stdout.splitlines()) == 7

    single = bashgym_cli("models", "check", "good")
    assert single.exit_code == 0 and single.stdout.startswith("ok    good:")


def test_models_check_of_an_unconfigured_alias_checks_what_a_run_would_use(
    bashgym_cli, bashgym_env, model_server, monkeypatch
):
    """A run asking for `judge` with no [models.judge] uses `default`; `models check judge`
    once refused it as unknown."""
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    write_models(bashgym_env.workdir, {"default": remote_alias("openai-compatible", model_server)})
    result = bashgym_cli("models", "check", "judge")
    assert result.exit_code == 0, result.output
    assert "judge is not configured: runs use the `default` alias for it" in result.stdout
    assert "ok    judge:" in result.stdout and len(model_server.requests) == 1


def test_models_check_starts_and_stops_the_embedded_runtime(
    bashgym_cli, bashgym_env, bashgym_host, register_plugin, model_server
):
    existing = bashgym_host.registry.items["runtimes"].get("embedded")
    if existing is not None:
        bashgym_host.remove(existing.plugin)
    runtime = RecordingRuntime(model_server.openai_base_url)
    register_plugin(RuntimePlugin(runtime), "fake-runtime")
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})
    result = bashgym_cli("models", "check")
    assert result.exit_code == 0, result.output
    assert runtime.events == ["start", "stop"]
    assert model_server.completions[-1].model == "fake"


def test_litellm_import_and_models_check_stay_offline(bashgym_env, model_server, tmp_path):
    """In a fresh interpreter, so litellm's import is part of what is watched: unless told
    otherwise it fetches a price list from raw.githubusercontent.com."""
    (bashgym_env.workdir / "bashgym.toml").write_text(
        f'[models.default]\nprovider = "openai-compatible"\nmodel = "m"\n'
        f'endpoint = "{model_server.openai_base_url}"\n'
    )
    script = textwrap.dedent(
        """
        import socket, sys
        LOCAL = (None, "127.0.0.1", "::1", "localhost")
        real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo
        def connect(self, address):
            if isinstance(address, tuple) and address[0] not in LOCAL:
                print("OUTBOUND", address, file=sys.stderr)
                raise OSError("blocked")
            return real_connect(self, address)
        def getaddrinfo(host, *args, **kwargs):
            if host not in LOCAL:
                print("OUTBOUND", host, file=sys.stderr)
                raise socket.gaierror("blocked")
            return real_getaddrinfo(host, *args, **kwargs)
        socket.socket.connect, socket.getaddrinfo = connect, getaddrinfo
        sys.argv = ["bashgym", "models", "check"]
        from bashgym_cli import main
        main()
        """
    )
    env = {**bashgym_env.env(), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=bashgym_env.workdir,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OUTBOUND" not in proc.stderr
    assert proc.stdout.startswith("ok    default:")
