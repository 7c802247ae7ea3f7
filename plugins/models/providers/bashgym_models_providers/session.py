"""Model aliases → an endpoint, a model id and a key, from one table per provider type.

Every part that calls a model (pipelines, judges, executors, `bashgym models check`) names an
alias from settings; this module turns an alias into the kernel's `Model`. `PROVIDERS` holds one
row per provider type: its default base URL, its default key env var and litellm's model prefix.

Keys are handled by env var NAME only: the value is read when a call is built, never stored or
logged, and a missing variable is caught here first and named. A keyless endpoint gets a
placeholder key for litellm: left empty, the OpenAI client would fall back to `OPENAI_API_KEY`
and send a real key to a local or third-party server.

Embedded aliases have no endpoint until a Runtime serves them. `ModelSession` starts the
registered Runtime on first use, shares one server per distinct alias config, and stops every
server it started when the session ends, on errors and Ctrl-C included (an ExitStack).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from bashgym.contracts import Completion, InputError
from bashgym.records import Usage
from bashgym_models_providers import calls
from bashgym_models_providers.calls import Health, RetryPolicy
from bashgym_models_providers.failures import describe_failure

if TYPE_CHECKING:
    from bashgym.registry import Registry
    from bashgym.settings import ModelAlias, Settings


@dataclass(frozen=True)
class ProviderSpec:
    """How one provider type is reached. `runtime` names the Runtime that serves it locally."""

    endpoint: str | None
    key_env: str | None
    litellm_prefix: str
    runtime: str | None = None


PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec("https://api.openai.com/v1", "OPENAI_API_KEY", "openai"),
    "anthropic": ProviderSpec("https://api.anthropic.com", "ANTHROPIC_API_KEY", "anthropic"),
    "nvidia": ProviderSpec("https://integrate.api.nvidia.com/v1", "NVIDIA_API_KEY", "nvidia_nim"),
    "openrouter": ProviderSpec("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openrouter"),
    # vLLM, Ollama, a self-hosted NIM: endpoint required, key optional.
    "openai-compatible": ProviderSpec(None, None, "openai"),
    "embedded": ProviderSpec(None, None, "openai", runtime="embedded"),
}

# litellm call options (never request-body params), and the params litellm takes by name; any
# other alias param goes into the request body (`extra_body`).
CALL_ONLY = ("messages", "tools", "tool_choice", "stream", "num_retries", "max_retries")
LITELLM_DIRECT = frozenset({"temperature", "top_p", "max_tokens", "timeout", *CALL_ONLY})
# Params of BashGym's own retry loop (`calls.RetryPolicy`), and a client's concurrency limit
# (other clients of the alias read it): never sent in a request.
NOT_SENT = ("retry_wait_s", "max_parallel_requests")
NO_KEY = "no-key"
DEFAULT_CHECK_TIMEOUT = 30.0


class ModelError(InputError):
    """An alias cannot be used as configured (the CLI prints it as one line, no traceback)."""


class MissingKeyError(ModelError):
    """The env var that should hold an alias's API key is not set."""

    def __init__(self, alias: str, env_var: str) -> None:
        super().__init__(
            f"model alias {alias!r} needs an API key: set the environment variable {env_var}"
        )
        self.alias, self.env_var = alias, env_var


def key_env(alias: ModelAlias) -> str | None:
    """The env var NAME holding the alias's key: its own, else the provider's default."""
    return alias.api_key_env or PROVIDERS[alias.provider].key_env


def static_endpoint(alias: ModelAlias) -> str | None:
    """The base URL known without starting anything (None for a not-yet-served embedded alias)."""
    return alias.endpoint or PROVIDERS[alias.provider].endpoint


@dataclass(frozen=True)
class ResolvedModel:
    """An alias with a concrete endpoint and model id: the kernel's `Model` (`acomplete`,
    `cost`, and the fields a runner that drives its own client reads). `health` is its
    session's: an endpoint that gave up on one call is tried once, not through a full backoff,
    by the next."""

    alias: str
    provider: str
    model: str
    endpoint: str
    api_key_env: str | None
    params: Mapping[str, Any] = field(default_factory=dict)
    served: bool = False  # started by a Runtime in this session (it already answered)
    health: Health = field(default_factory=Health, compare=False, repr=False)

    @property
    def spec(self) -> ProviderSpec:
        return PROVIDERS[self.provider]

    @property
    def litellm_model(self) -> str:
        """The model as litellm names it (its prefix picks the client; its price list)."""
        return f"{self.spec.litellm_prefix}/{self.model}"

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """USD for these tokens: 0 for a model served on this machine (its cost is the
        machine's), else litellm's price (None when unlisted: unknown)."""
        if self.served or self.spec.runtime is not None:
            return 0.0
        return cost_usd(self.litellm_model, input_tokens, output_tokens)

    async def acomplete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
        retries: int | None = None, remaining_s: Callable[[], float | None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> Completion:  # fmt: skip
        """One answer (the kernel's `Model.acomplete`): `params` over the alias's, retried on
        transient failures, `retries` tries after the first (None: the alias's
        `params.max_retries`, else 4; 0: one try), the first wait `params.retry_wait_s`
        (default 1 s); raises ModelCallError (`transient` set) saying why. Not charged here."""
        given = dict(params or {})
        policy = {} if retries is None else {"retries": max(retries, 0)}
        if given.get("retry_wait_s") is not None:
            policy["base_s"] = float(given.pop("retry_wait_s"))
        call: dict[str, Any] = {"messages": messages}
        if tools is not None:
            call["tools"] = tools
        if response_format is not None:
            call["response_format"] = response_format
        response = await calls.acomplete(
            self,
            policy=RetryPolicy.for_model(self, **policy),
            remaining_s=remaining_s or (lambda: None),
            on_failure=on_failure or (lambda exc: None),
            health=self.health,
            params=given,
            **call,
        )
        return self.completion_of(response)

    def completion_of(self, response: Any) -> Completion:
        """litellm's response as the kernel's Completion: the message as plain OpenAI-shaped
        dicts (`tool_calls` only when the model made some), cached prompt tokens apart."""
        choice = response.choices[0]
        answer = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        tool_calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.function.name or "",
                    "arguments": call.function.arguments or "{}",
                },
            }
            for call in (answer.tool_calls or [])
        ]
        if tool_calls:
            message["tool_calls"] = tool_calls
        raw = getattr(response, "usage", None)
        cached = getattr(getattr(raw, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        prompt = getattr(raw, "prompt_tokens", 0) or 0
        output = getattr(raw, "completion_tokens", 0) or 0
        usage = Usage(input_tokens=prompt - cached, output_tokens=output, cache_read_tokens=cached)
        return Completion(
            message=message,
            usage=usage,
            cost_usd=self.cost(prompt, output),
            model=self.model,
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def require_key(self) -> None:
        """Raise MissingKeyError unless the key env var (if the alias needs one) is set."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise MissingKeyError(self.alias, self.api_key_env)

    def api_key(self) -> str | None:
        """The key's value, read now from the env (None when the alias needs no key)."""
        self.require_key()
        return os.environ[self.api_key_env] if self.api_key_env else None

    def _litellm_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Keyword arguments for `litellm.completion` (the key is read from the env now)."""
        merged = {**self.params, **overrides}
        kwargs = {k: v for k, v in merged.items() if k in LITELLM_DIRECT}
        extra = _extra_body(merged)
        if extra:
            kwargs["extra_body"] = extra
        return {
            "model": self.litellm_model,
            "api_base": self.endpoint,
            "api_key": self.api_key() or NO_KEY,
            **kwargs,
        }


def _extra_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """Params litellm does not know by name (e.g. `seed`, `stop`): sent in the request body."""
    extra = dict(params.get("extra_body") or {})
    skip = {*LITELLM_DIRECT, *NOT_SENT, "extra_body"}
    extra.update({k: v for k, v in params.items() if k not in skip})
    return extra


def resolve_static(name: str, alias: ModelAlias, *, health: Health | None = None) -> ResolvedModel:
    """Resolve an alias that needs no Runtime; raise ModelError naming what is missing.
    `health`: the session's (default: one of its own)."""
    spec = PROVIDERS[alias.provider]
    if spec.runtime is not None:
        raise ModelError(f"model alias {name!r} is served by the {spec.runtime!r} runtime")
    endpoint = static_endpoint(alias)
    if not endpoint:
        raise ModelError(
            f"model alias {name!r} (provider {alias.provider}) needs an endpoint, "
            f"e.g. http://127.0.0.1:8000/v1: set models.{name}.endpoint"
        )
    if not alias.model:
        raise ModelError(
            f"model alias {name!r} (provider {alias.provider}) needs a model id: "
            f"set models.{name}.model"
        )
    return ResolvedModel(
        alias=name,
        provider=alias.provider,
        model=alias.model,
        endpoint=endpoint.rstrip("/"),
        api_key_env=key_env(alias),
        params=dict(alias.params),
        health=health or Health(),
    )


# Where a runtime-served alias points when the session was asked not to start servers (port 9
# is the discard port: nothing answers, and nothing is meant to call it).
NOT_SERVED_ENDPOINT = "http://127.0.0.1:9/v1"


class ModelSession:
    """Resolves aliases for one run or command; servers it starts live until it exits.

    with ModelSession(settings, host.registry) as models:
        reply = await models.resolve("judge").acomplete([{"role": "user", "content": "hi"}])
    """

    def __init__(
        self, settings: Settings, registry: Registry | None = None, *, serve: bool = True
    ) -> None:
        """`serve=False` resolves runtime-served aliases (e.g. embedded) to a placeholder endpoint
        without starting anything: for commands that only build or check a config."""
        self.settings = settings
        self.registry = registry
        self.serve = serve
        self._stack = ExitStack()
        self._lock = threading.RLock()
        self._resolved: dict[str, ResolvedModel] = {}
        self._served: dict[tuple[str, str], Any] = {}
        self._closed = False
        # one per session, shared by every call through it: see `calls.Health`
        self.health = Health()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every server this session started (newest first)."""
        with self._lock:
            self._closed = True
            self._resolved.clear()
            self._served.clear()
            self._stack.close()

    def alias(self, name: str) -> ModelAlias:
        """The alias config; names not in settings fall back like `Settings.alias` does."""
        return self.settings.alias(name)

    def resolve(self, name: str) -> ResolvedModel:
        """Endpoint and model id for `name`, starting its Runtime on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this ModelSession is closed")
            if name not in self._resolved:
                alias = self.alias(name)
                if PROVIDERS[alias.provider].runtime is None:
                    self._resolved[name] = resolve_static(name, alias, health=self.health)
                elif not self.serve:
                    self._resolved[name] = ResolvedModel(
                        alias=name,
                        provider=alias.provider,
                        model=alias.model or alias.provider,  # the runtime would name it
                        endpoint=NOT_SERVED_ENDPOINT,
                        api_key_env=alias.api_key_env,
                        params=dict(alias.params),
                        served=True,
                        health=self.health,
                    )
                else:
                    self._resolved[name] = self._serve(name, alias)
            return self._resolved[name]

    def _serve(self, name: str, alias: ModelAlias) -> ResolvedModel:
        runtime_name = PROVIDERS[alias.provider].runtime
        assert runtime_name is not None
        key = (runtime_name, alias.model_dump_json())
        if key not in self._served:
            runtime = self._runtime(name, runtime_name)
            self._served[key] = self._stack.enter_context(runtime.serve(alias, self.settings))
        served = self._served[key]
        return ResolvedModel(
            alias=name,
            provider=alias.provider,
            model=served.model,
            endpoint=served.base_url.rstrip("/"),
            api_key_env=alias.api_key_env,
            params=dict(alias.params),
            served=True,
            health=self.health,
        )

    def _runtime(self, alias_name: str, runtime_name: str) -> Any:
        from bashgym.registry import UnknownNameError

        registry = self.registry
        if registry is None:  # no registry handed in: the CLI's current one
            from bashgym.plugins import current_host

            registry = current_host().registry
        try:
            return registry.get("runtimes", runtime_name).obj
        except UnknownNameError:
            raise ModelError(
                f"model alias {alias_name!r} uses the {runtime_name} model, but no runtime named "
                f"{runtime_name!r} is installed (install bashgym-models-{runtime_name}, or point "
                f"models.{alias_name} at another provider)"
            ) from None

    def check(self, name: str) -> CheckResult:
        """One tiny request through `name`: its latency and tokens, or the failure in a line."""
        return check(self, name)


PRICE_LIST = "model_prices_and_context_window_backup.json"


@functools.cache
def _prices() -> dict[str, Any]:
    """litellm's bundled price list, read as JSON. Why not `litellm.model_cost`: importing
    litellm takes seconds, and a run that only needs prices should not pay for it."""
    import importlib.util
    import json

    spec = importlib.util.find_spec("litellm")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / PRICE_LIST
        if path.is_file():
            return json.loads(path.read_text())
    return {}


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Price of the tokens from litellm's bundled price list (offline); None when the model is
    not listed there (local and self-hosted models: their cost is the machine's, not per token).
    """
    if not (input_tokens or output_tokens):
        return 0.0
    prices = _prices()
    entry = prices.get(model) or prices.get(model.rsplit("/", 1)[-1])
    if not entry:
        return None
    return input_tokens * float(entry.get("input_cost_per_token") or 0) + output_tokens * float(
        entry.get("output_cost_per_token") or 0
    )


def _not_a_loop_change(record: logging.LogRecord) -> bool:
    """litellm warns when its logging worker meets a second event loop; a process that calls a
    model in a check (`asyncio.run`) and then in its run's loop always does, harmlessly."""
    return not str(record.msg).startswith("LoggingWorker: event loop changed")


def load_litellm() -> Any:
    """Import litellm offline and quiet: its import otherwise fetches a price list from GitHub,
    every error prints "Give Feedback / Get Help" banners to stdout, and a library that set up
    INFO logging (some do) would get a line per call from its loggers."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        if _not_a_loop_change not in logger.filters:
            logger.addFilter(_not_a_loop_change)
    return litellm


@dataclass(frozen=True)
class CheckResult:
    alias: str
    ok: bool
    latency_s: float | None = None
    error: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


def check(session: ModelSession, name: str) -> CheckResult:
    """Send one tiny request through `name`; report latency or the failure in one line."""
    timeout = float(session.alias(name).params.get("timeout") or DEFAULT_CHECK_TIMEOUT)
    resolved: ResolvedModel | None = None
    try:
        resolved = session.resolve(name)
        # One try, whatever the alias's own `max_retries` / `num_retries` say: the overrides
        # replace them (passed beside **kwargs, they raised "multiple values for keyword").
        kwargs = resolved._litellm_kwargs(
            max_tokens=8, timeout=timeout, num_retries=0, max_retries=0
        )
        litellm = load_litellm()
        started = time.perf_counter()
        reply = litellm.completion(
            **kwargs, messages=[{"role": "user", "content": "Reply with OK."}]
        )
        usage = getattr(reply, "usage", None)
        return CheckResult(
            name,
            True,
            latency_s=time.perf_counter() - started,
            model=resolved.model,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )
    except ModelError as exc:
        return CheckResult(name, False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 -- every failure becomes one line of the report
        return CheckResult(name, False, error=describe_failure(exc, resolved, timeout))
