"""Before any batch: one tiny request per alias a config calls, through DataDesigner's own client.

"Calls" means named by one of the config's columns (`get_model_aliases()`: an LLM, judge,
embedding or image column's `model_alias`, a custom column's `model_aliases`), not every alias
the builder defines: a builder made without model configs carries DataDesigner's built-in ones
(nvidia-text, openai-vision, ...), which a samplers-only config never calls. Checking those
would bill requests for nothing and fail a model-free run when the default endpoint is down.
Processors name no model, and the column profiler (which does) is skipped (`designer`).

A refused connection, a bad key or a wrong model id is one line (exit 2), not a batch of failed
rows; a 429 or a 5xx is tried again with backoff for up to `designer.rate_limit_give_up_s`, then
one line. Its tokens and failed tries are charged to the run like any request. (This replaces
DataDesigner's own health check, whose requests it does not count.) Models served here already
answered when they started.

Why DataDesigner's client and not the alias's `acomplete` (litellm): importing litellm costs a
run 3-5 s of CPU before its first row, and nothing else in a DataDesigner run needs it; this
client is the one the generation is about to use anyway (imported either way), so the check
also exercises the very request path the rows will take.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError, Model, RunContext
from bashgym.events import UsageCharged
from bashgym.records import Usage
from bashgym_designer import transport
from bashgym_designer.constrain import base_alias
from bashgym_designer.faults import FIRST_BACKOFF_S, MAX_BACKOFF_S
from bashgym_designer.models import model_config, model_provider
from bashgym_designer.settings import designer_settings

if TYPE_CHECKING:
    import data_designer.config as dd

# Check failures worth trying again (a server that is there but busy or briefly failing);
# anything else -- connection refused at start, a bad key, a wrong model id -- is one line now.
_TRANSIENT = re.compile(r"^(HTTP (429|5\d\d)\b|connection to .* lost|malformed reply)")
CHECK = [{"role": "user", "content": "Reply with OK."}]
CHECK_TIMEOUT_S = 30.0  # one tiny answer; an alias's own `timeout` param wins
MAX_MESSAGE = 300


def called_aliases(builder: dd.DataDesignerConfigBuilder) -> list[str]:
    """The aliases `builder`'s columns call, constrained copies folded into their base alias
    (`default--trajectory` -> `default`), sorted; empty for a config with no model column."""
    return sorted(
        {
            base_alias(alias)
            for column in builder.get_column_configs()
            for alias in column.get_model_aliases()
            if alias
        }
    )


def preflight(builder: dd.DataDesignerConfigBuilder, run: RunContext) -> None:
    """Check every alias `builder` calls (see the module docstring); InputError when one does
    not answer. A config that calls none sends nothing (and starts no served model)."""
    for alias in called_aliases(builder):
        model = run.model(alias)  # starts a served model now: one that cannot start fails here
        if model.served:
            continue
        error, tried = _check_until(
            run, model, designer_settings(run.settings).rate_limit_give_up_s
        )
        if error is not None:
            raise InputError(f"model alias {alias!r} does not answer: {error}{tried}")


def _check(run: RunContext, model: Model) -> str | None:
    """One try of the tiny request: None when it answered (its usage charged), else why not
    in one line."""
    timeout = float(model.params.get("timeout") or CHECK_TIMEOUT_S)
    try:
        provider = model_provider(model)  # MissingKeyError (one line) when its key is not set
    except InputError as exc:
        return str(exc)
    try:
        response = asyncio.run(_ask(model, provider, timeout))
    except Exception as exc:  # noqa: BLE001 -- every failure becomes one line (below)
        return describe(exc, model, timeout)
    if not response.choices:
        return f"malformed reply from {model.endpoint} (a reply with no choices)"
    used = response.usage
    tokens_in = int(getattr(used, "input_tokens", 0) or 0)
    tokens_out = int(getattr(used, "output_tokens", 0) or 0)
    run.charge(
        Usage(input_tokens=tokens_in, output_tokens=tokens_out),
        model.cost(tokens_in, tokens_out),
        model=model.model,
        alias=model.alias,
    )
    return None


async def _ask(model: Model, provider: dd.ModelProvider, timeout: float) -> Any:
    """The tiny request through DataDesigner's client for `model` (async, as generation's
    is, so both share one TLS context: `transport`), with no retries of its own: each try is
    counted here."""
    # DataDesigner's engine: imported after prepare_environment (the runner calls it first)
    from data_designer.engine.model_provider import resolve_model_provider_registry
    from data_designer.engine.models.clients.adapters.http_model_client import (
        ClientConcurrencyMode,
    )
    from data_designer.engine.models.clients.factory import create_model_client
    from data_designer.engine.models.clients.retry import RetryConfig
    from data_designer.engine.models.clients.types import ChatCompletionRequest
    from data_designer.engine.secret_resolver import EnvironmentResolver

    transport.install()
    client = create_model_client(
        model_config(model, max_parallel_requests=1, timeout=timeout),
        EnvironmentResolver(),
        resolve_model_provider_registry([provider]),
        retry_config=RetryConfig(max_retries=0, retryable_status_codes=frozenset()),
        client_concurrency_mode=ClientConcurrencyMode.ASYNC,
    )
    request = ChatCompletionRequest(model=model.model, messages=CHECK, max_tokens=8)
    try:
        return await client.acompletion(request)
    finally:
        await client.aclose()


def describe(exc: BaseException, model: Model, timeout: float) -> str:
    """One line for a failed check, by the kind DataDesigner's client gave it: connection
    refused or lost, timeout, a malformed reply, 401/403, 404, or the status and the server's
    message."""
    from data_designer.engine.models.clients.errors import ProviderError, ProviderErrorKind

    where = model.endpoint
    if not isinstance(exc, ProviderError):
        return f"malformed reply from {where} ({type(exc).__name__}: {_first_line(exc)})"
    kind, status = exc.kind, exc.status_code
    if kind == ProviderErrorKind.API_CONNECTION:
        if _refused(exc):
            return f"connection refused at {where} (is the server running?)"
        return f"connection to {where} lost before an answer (did the server stop?)"
    if kind == ProviderErrorKind.TIMEOUT:
        return f"timed out after {timeout:g}s waiting for {where}"
    if kind == ProviderErrorKind.API_ERROR and status is not None and status < 400:
        return f"malformed reply from {where} (a body that is not JSON)"
    message = _first_line(exc)
    if status in (401, 403):
        hint = f" (check {model.api_key_env})" if model.api_key_env else ""
        return f"{status} unauthorized: the endpoint rejected the API key{hint}: {message}"
    if status == 404:
        return f"404 not found: model {model.model!r} at {where}: {message}"
    if status is not None:
        return f"HTTP {status} from {where}: {message}"
    return f"{kind.value}: {message}"


def _refused(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    for _ in range(20):  # the exception chain, outermost first
        if cause is None:
            return False
        if isinstance(cause, ConnectionRefusedError) or "Connection refused" in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0][:MAX_MESSAGE]


def _check_until(run: RunContext, model: Model, give_up_s: float) -> tuple[str | None, str]:
    """`_check(model)`, tried again on transient failures (backoff with jitter, as `faults`
    does for generation) until it answers or `give_up_s` has passed; each failed try is
    charged as a failed request. Returns the last error (None: it answered) and, after several
    tries, how long it was tried (for the error line)."""
    started, tries = 0.0, 0
    while True:
        error = _check(run, model)
        if error is None:
            return None, ""
        tries, started = tries + 1, started or time.monotonic()
        run.emit(UsageCharged(model=model.model, alias=model.alias, requests=0, failed_requests=1))
        left = started + give_up_s - time.monotonic()
        if not _TRANSIENT.search(error) or left <= 0:
            spent = time.monotonic() - started
            tried = (
                f" ({tries} tries over {spent:.0f}s; designer.rate_limit_give_up_s)"
                if tries > 1
                else ""
            )
            return error, tried
        time.sleep(min(left, MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (tries - 1)) * _jitter())


def _jitter() -> float:
    return random.uniform(0.5, 1.0)
