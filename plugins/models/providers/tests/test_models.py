"""Model aliases → DataDesigner and litellm, for every provider type, against the scripted server.

Each provider type is exercised through the real clients (DataDesigner's HTTP adapters, litellm)
with its endpoint overridden to 127.0.0.1, so the request path, the credential header and the
model id each client sends are checked, not assumed. The embedded path uses a fake Runtime that
"serves" the scripted server and records start/stop, so auto-start and auto-stop are observable.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bashgym_models_providers import PROVIDERS, MissingKeyError, ModelError, ModelSession
from bashgym_testing.server import Fault, Reply

from bashgym import hookimpl
from bashgym.contracts import Pipeline, Runtime, ServedModel
from bashgym.settings import ModelAlias, Settings

SECRET = "sk-scripted-secret-value"


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


class FakeRuntime(Runtime):
    """Serves by pointing at the scripted server; records every start and stop."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.events: list[str] = []

    @contextmanager
    def serve(self, alias: ModelAlias, settings: Settings) -> Iterator[ServedModel]:
        self.events.append("start")
        try:
            yield ServedModel(base_url=self.base_url, model="fake")
        finally:
            self.events.append("stop")


class LLMPipeline(Pipeline):
    """One sampler and one LLM text column on the alias `default`, via `run.models`."""

    runner = "datadesigner"

    fail_after_models = False

    def build(self, options: Any, run: Any, seed: Any) -> Any:
        import data_designer.config as dd

        config = run.models.model_config("default")
        if self.fail_after_models:
            raise RuntimeError("pipeline broke after starting the model")
        return (
            dd.DataDesignerConfigBuilder(model_configs=[config])
            .add_column(
                dd.SamplerColumnConfig(
                    name="topic",
                    sampler_type="category",
                    params=dd.CategorySamplerParams(values=["git", "sed"]),
                )
            )
            .add_column(
                dd.LLMTextColumnConfig(
                    name="answer", prompt="Explain {{ topic }} briefly.", model_alias="default"
                )
            )
        )


class LLMPlugin:
    def __init__(self, pipeline: LLMPipeline, runtime: FakeRuntime | None = None) -> None:
        self.pipeline, self.runtime = pipeline, runtime

    @hookimpl
    def register_pipelines(self, register: Any) -> None:
        register("llm", self.pipeline)

    @hookimpl
    def register_runtimes(self, register: Any) -> None:
        if self.runtime is not None:
            register("embedded", self.runtime)


@pytest.fixture
def llm_run(bashgym_cli, bashgym_env, bashgym_host, register_plugin, model_server):
    """`llm_run(runtime=None, fail=False)` → (CliResult, run dir) of `bashgym run -p llm`."""
    # Whoever else registers the `embedded` runtime (the real plugin) steps aside for the fake.
    existing = bashgym_host.registry.items["runtimes"].get("embedded")
    if existing is not None:
        bashgym_host.remove(existing.plugin)

    def run(runtime: FakeRuntime | None = None, fail: bool = False, n: int = 3):
        pipeline = LLMPipeline()
        pipeline.fail_after_models = fail
        register_plugin(LLMPlugin(pipeline, runtime), "llm-plugin")
        out = bashgym_env.workdir / "run"
        result = bashgym_cli("run", "-p", "llm", "-k", "parquet", "-n", str(n), "--out", out)
        return result, out

    return run


# ---------------------------------------------------------------------------------------------
# The table


@pytest.mark.parametrize(
    ("provider", "endpoint", "key", "dd_type", "prefix"),
    [
        ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "openai", "openai"),
        ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "anthropic", "anthropic"),
        (
            "nvidia",
            "https://integrate.api.nvidia.com/v1",
            "NVIDIA_API_KEY",
            "openai",
            "nvidia_nim",
        ),
        (
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            "openai",
            "openrouter",
        ),
    ],
)
def test_provider_defaults_feed_both_clients(monkeypatch, provider, endpoint, key, dd_type, prefix):
    monkeypatch.setenv(key, SECRET)
    settings = Settings(models={"m": ModelAlias(provider=provider, model="x-1")})
    with ModelSession(settings) as models:
        dd_provider = models.model_provider("m")
        config = models.model_config("m")
        kwargs = models.litellm_kwargs("m")
    assert (dd_provider.endpoint, dd_provider.provider_type) == (endpoint, dd_type)
    assert dd_provider.api_key == key  # the NAME: DataDesigner reads the variable itself
    assert (config.alias, config.model, config.provider) == ("m", "x-1", dd_provider.name)
    assert config.skip_health_check is False
    assert kwargs["model"] == f"{prefix}/x-1"
    assert (kwargs["api_base"], kwargs["api_key"]) == (endpoint, SECRET)


def test_missing_key_is_named_and_never_sent(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings(models={"judge": ModelAlias(provider="openai", model="gpt-x")})
    with ModelSession(settings) as models:
        for use in (models.model_provider, models.litellm_kwargs):
            with pytest.raises(
                MissingKeyError, match="set the environment variable OPENAI_API_KEY"
            ):
                use("judge")


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


def test_params_split_between_known_fields_and_the_request_body(monkeypatch):
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
        inference = models.model_config("a", temperature=0.9).inference_parameters
        kwargs = models.litellm_kwargs("a")
    assert (inference.temperature, inference.max_tokens, inference.timeout) == (0.9, 64, 1)
    assert inference.max_parallel_requests == 8 and inference.extra_body == {"seed": 7}
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
        assert models.model_provider("local").api_key is None
        models.completion("local", [{"role": "user", "content": "hi"}], max_retries=0)
    assert model_server.completions[-1].api_key != SECRET


# ---------------------------------------------------------------------------------------------
# litellm, directly


@pytest.mark.parametrize("provider", REMOTE)
def test_litellm_call_through_each_provider(monkeypatch, model_server, provider):
    monkeypatch.setenv(key_var(provider), SECRET)
    model_server.script(Reply("pong"))
    alias = ModelAlias.model_validate(remote_alias(provider, model_server))
    with ModelSession(Settings(models={"a": alias})) as models:
        reply = models.completion("a", [{"role": "user", "content": "ping"}], max_tokens=5)
    assert reply.choices[0].message.content == "pong"
    (request,) = model_server.completions
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    assert (request.path, request.model, request.api_key) == (path, f"{provider}-model", SECRET)
    assert request.body["max_tokens"] == 5


# ---------------------------------------------------------------------------------------------
# DataDesigner, end to end through `bashgym run`


@pytest.mark.parametrize("provider", REMOTE)
def test_bashgym_run_through_each_provider(
    monkeypatch, bashgym_env, model_server, llm_run, provider
):
    monkeypatch.setenv(key_var(provider), SECRET)
    model_server.add_rule("Explain", lambda req: Reply(f"{req.api} says {req.last_user_text}"))
    write_models(bashgym_env.workdir, {"default": remote_alias(provider, model_server)})

    result, out = llm_run()

    assert result.exit_code == 0, result.output
    rows = pq.read_table(out / "data.parquet").to_pylist()
    api = "anthropic" if provider == "anthropic" else "openai"
    assert len(rows) == 3
    assert all(r["answer"] == f"{api} says Explain {r['topic']} briefly." for r in rows)
    posts = model_server.completions
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    assert {(r.path, r.model, r.api_key) for r in posts} == {(path, f"{provider}-model", SECRET)}
    # A remote alias gets one counted preflight request before any row (not DataDesigner's
    # uncounted health check).
    assert sum(r.last_user_text == "Reply with OK." for r in posts) == 1
    assert not any("Hello!" in r.last_user_text for r in posts)
    assert SECRET not in (out / "run.toml").read_text() + (out / "run.json").read_text()


def test_embedded_alias_is_started_for_the_run_and_stopped_after(
    bashgym_env, model_server, llm_run
):
    runtime = FakeRuntime(model_server.openai_base_url)
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})

    result, out = llm_run(runtime)

    assert result.exit_code == 0, result.output
    assert runtime.events == ["start", "stop"]
    assert len(pq.read_table(out / "data.parquet")) == 3
    posts = model_server.completions
    assert posts and {r.model for r in posts} == {"fake"}
    # serve() already waited until the server answered: no health check for a served model.
    assert not any("Hello!" in r.last_user_text for r in posts)


def test_embedded_alias_is_stopped_when_the_run_fails(bashgym_env, model_server, llm_run):
    runtime = FakeRuntime(model_server.openai_base_url)
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})

    result, out = llm_run(runtime, fail=True)

    # A pipeline that raises while building is one line naming it (exit 2), not a traceback,
    # and the model server it had started is stopped all the same.
    assert result.exit_code == 2
    assert (
        "pipeline 'llm' failed to build its config: RuntimeError: pipeline broke" in result.output
    )
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    assert runtime.events == ["start", "stop"]


def test_session_stops_runtimes_on_keyboard_interrupt_and_shares_one_server(model_server):
    runtime = FakeRuntime(model_server.openai_base_url)

    class Registry:
        def get(self, kind: str, name: str) -> Any:
            assert (kind, name) == ("runtimes", "embedded")
            return type("Registered", (), {"obj": runtime})()

    settings = Settings(models={"default": ModelAlias(), "judge": ModelAlias()})
    with pytest.raises(KeyboardInterrupt), ModelSession(settings, Registry()) as models:  # type: ignore[arg-type]
        assert runtime.events == []  # lazily: nothing starts before first use
        assert models.resolve("default").endpoint == model_server.openai_base_url
        assert models.model_config("judge").model == "fake"
        assert models.litellm_kwargs("default")["api_key"] == "no-key"
        raise KeyboardInterrupt
    assert runtime.events == ["start", "stop"]  # two identical aliases, one server


def test_embedded_alias_without_a_runtime_is_a_clear_error(bashgym_env, bashgym_host, llm_run):
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})
    result, _ = llm_run()
    assert result.exit_code == 2
    assert "no runtime named 'embedded' is installed" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


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
        "api_key_set": True,
    }
    assert rows["judge"]["api_key_set"] is False
    assert rows["default"]["api_key_env"] is None

    table = bashgym_cli("models")
    assert table.exit_code == 0
    first_line = {line.split()[1]: line for line in table.stdout.splitlines() if "│" in line}
    assert "yes" in first_line["teacher"] and " NO " in first_line["judge"]
    assert "OPENAI_API_" in first_line["teacher"]  # folded at 80 columns, never cut short
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


def test_models_check_starts_and_stops_the_embedded_runtime(
    bashgym_cli, bashgym_env, bashgym_host, register_plugin, model_server
):
    existing = bashgym_host.registry.items["runtimes"].get("embedded")
    if existing is not None:
        bashgym_host.remove(existing.plugin)
    runtime = FakeRuntime(model_server.openai_base_url)
    register_plugin(LLMPlugin(LLMPipeline(), runtime), "fake-runtime")
    write_models(bashgym_env.workdir, {"default": {"provider": "embedded"}})
    result = bashgym_cli("models", "check")
    assert result.exit_code == 0, result.output
    assert runtime.events == ["start", "stop"]
    assert model_server.completions[-1].model == "fake"


# ---------------------------------------------------------------------------------------------
# Offline: no connection leaves the machine


@pytest.fixture
def outbound(monkeypatch) -> list[Any]:
    """Every connection attempt (and name lookup) to a non-loopback address, refused."""
    attempts: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def local(address: Any) -> bool:
        return not isinstance(address, tuple) or address[0] in ("127.0.0.1", "::1", "localhost")

    def connect(self: socket.socket, address: Any) -> Any:
        if not local(address):
            attempts.append(address)
            raise OSError("outbound connection blocked by the test")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not local(address):
            attempts.append(address)
            return 111
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in (None, "127.0.0.1", "::1", "localhost"):
            attempts.append(host)
            raise socket.gaierror("name lookup blocked by the test")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture
def cold_tokenizer(monkeypatch) -> None:
    """Forget any cl100k_base already loaded in this process (litellm loads it on import)."""
    import tiktoken.registry
    from data_designer.engine.utils import token_counting

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(token_counting, "get_cl100k_base_tokenizer", _fresh_getter())
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)


def _fresh_getter() -> Any:
    from functools import lru_cache

    import data_designer.lazy_heavy_imports as lazy

    @lru_cache(maxsize=1)
    def get_cl100k_base_tokenizer() -> Any:
        return lazy.tiktoken.get_encoding("cl100k_base")

    return get_cl100k_base_tokenizer


def test_pipeline_run_makes_no_outbound_connection(
    monkeypatch, bashgym_env, model_server, llm_run, outbound, cold_tokenizer
):
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    write_models(bashgym_env.workdir, {"default": remote_alias("openai-compatible", model_server)})

    result, out = llm_run()

    assert result.exit_code == 0, result.output
    assert outbound == []
    log = (out / "logs" / "datadesigner.log").read_text()
    assert "failed to calculate" not in log  # the profiler counted tokens, offline
    from data_designer.engine.utils.token_counting import count_text_tokens

    assert count_text_tokens("hello world") == 2  # the real cl100k_base, not an estimate


def test_without_a_bundled_tokenizer_counts_are_estimated_not_downloaded(
    monkeypatch, bashgym_env, outbound, cold_tokenizer
):
    import bashgym_designer.designer as designer
    from data_designer.engine.utils import token_counting

    monkeypatch.setattr(designer, "_bundled_tiktoken_dir", lambda: None)
    designer.prepare_environment(Settings())
    assert token_counting.count_text_tokens("x" * 10) == 3
    assert outbound == []


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
