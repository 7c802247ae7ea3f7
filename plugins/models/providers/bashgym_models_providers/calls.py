"""One model request with bounded retries: every try counted, the final failure in one line.

The clients' own retries are switched off (`max_retries=0` for the OpenAI/Anthropic SDKs,
`num_retries=0` for litellm) and retried here instead, because only here is each try seen: a
try that failed is reported (`on_failure`, so a caller counts it in `failed_requests`), a 200
whose body is not JSON is retried like a 5xx (the SDKs treat it as final), a rate limit's
Retry-After is honoured, and the wait never runs past the caller's deadline. DataDesigner's
request executor does the same for pipelines (exponential backoff, bounded tries).

Hand-written rather than tenacity: the loop is a dozen lines, and what it must do on each try
(count it, classify it from litellm's exception chain, stop before a deadline) is most of it.

With a `Health` (one per model session: every call of a run shares it), an endpoint that failed
a whole call is marked down: the next call through it tries once before giving up, so a dead
server costs each later task one failed try, not a full series of backoffs; the first answer
marks it up again.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bashgym import contracts
from bashgym_models_providers.failures import describe_failure, is_transient, retry_after_s

if TYPE_CHECKING:
    from bashgym_models_providers.session import ResolvedModel

DEFAULT_RETRIES = 4  # 5 tries: about 15 s of backoff before a call gives up
DEFAULT_TIMEOUT_S = 600.0  # litellm's own default for one request


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` tries after the first; waits of `base_s`, 2x, 4x … (with jitter), at most
    `cap_s` each (a Retry-After too)."""

    retries: int = DEFAULT_RETRIES
    base_s: float = 1.0
    cap_s: float = 30.0

    @classmethod
    def for_model(cls, model: ResolvedModel, **fields: Any) -> RetryPolicy:
        """The alias's `params.max_retries` (or `num_retries`) when set, else the default, and
        its `params.retry_wait_s` as the first wait; `fields` (e.g. `base_s`) over both."""
        params = model.params
        given = params.get("max_retries", params.get("num_retries"))
        retries = DEFAULT_RETRIES if given is None else max(int(given), 0)
        wait = params.get("retry_wait_s")
        base = {} if wait is None else {"base_s": float(wait)}
        return cls(**{"retries": retries, **base, **fields})

    def wait_s(self, failed_tries: int, exc: BaseException) -> float:
        backoff = self.base_s * 2 ** (failed_tries - 1) * random.uniform(0.8, 1.2)
        return min(max(retry_after_s(exc) or 0.0, backoff), self.cap_s)


class ModelCallError(contracts.ModelCallError):
    """The kernel's ModelCallError (a call that failed for good; `str()` is one line: the alias,
    the cause, the tries), with the last try's exception kept as `cause`."""

    def __init__(
        self, reason: str, *, tries: int, cause: BaseException, transient: bool = False
    ) -> None:
        super().__init__(reason, tries=tries, transient=transient)
        self.cause = cause


class Health:
    """Endpoints whose last call gave up, shared by the calls of one run."""

    def __init__(self) -> None:
        self._down: set[str] = set()
        self._lock = threading.Lock()

    def down(self, endpoint: str) -> bool:
        with self._lock:
            return endpoint in self._down

    def mark(self, endpoint: str, *, up: bool) -> None:
        with self._lock:
            (self._down.discard if up else self._down.add)(endpoint)


class MalformedReply(ValueError):
    """A 200 whose JSON holds no answer (no `choices`)."""


def timeout_s(model: ResolvedModel) -> float:
    return float(model.params.get("timeout") or DEFAULT_TIMEOUT_S)


async def acomplete(
    model: ResolvedModel,
    *,
    policy: RetryPolicy | None = None,
    remaining_s: Callable[[], float | None] = lambda: None,
    on_failure: Callable[[BaseException], None] = lambda exc: None,
    health: Health | None = None,
    params: dict[str, Any] | None = None,
    **call: Any,
) -> Any:
    """`litellm.acompletion(messages=…, tools=…, **call)` through `model`, `params` over the
    alias's (temperature, max_tokens, …), retried on transient failures; raises ModelCallError
    saying why, e.g. "model student: HTTP 429 from http://…: Rate limit reached; gave up after
    5 tries".
    `on_failure` is called once per failed try, a try cut short by cancellation included."""
    from bashgym_models_providers.session import load_litellm

    policy = policy or RetryPolicy.for_model(model)
    kwargs = {**model._litellm_kwargs(**(params or {}), max_retries=0, num_retries=0), **call}
    if kwargs.get("tools"):
        # Our tools are plain functions, never litellm's MCP gateway; its gateway check imports
        # mcp>=2.2 APIs, and a library installed beside it may pin mcp<2 (data-designer does):
        # without this flag (litellm's own, used by its MCP handlers) every call with tools
        # fails on an ImportError.
        kwargs["_skip_mcp_handler"] = True
    litellm = load_litellm()
    health = health or Health()
    tries = 1 + (0 if health.down(model.endpoint) else policy.retries)
    failed = 0
    while True:
        try:
            response = await litellm.acompletion(**kwargs)
            # a body that parsed but holds no answer is as broken as one that did not parse
            if not getattr(response, "choices", None):
                raise MalformedReply("a reply with no choices")
        except asyncio.CancelledError as exc:  # a deadline or Ctrl-C: the try got no answer
            on_failure(exc)
            raise
        except Exception as exc:  # classified below; the last one is raised
            failed += 1
            on_failure(exc)
            left = remaining_s()
            wait = policy.wait_s(failed, exc)
            transient = isinstance(exc, MalformedReply) or is_transient(exc)
            if failed >= tries or not transient or (left is not None and wait >= left):
                if transient:
                    health.mark(model.endpoint, up=False)
                reason = _reason(model, exc, failed)
                raise ModelCallError(reason, tries=failed, cause=exc, transient=transient) from exc
            await asyncio.sleep(wait)
        else:
            health.mark(model.endpoint, up=True)
            return response


def _reason(model: ResolvedModel, exc: BaseException, tries: int) -> str:
    if isinstance(exc, MalformedReply):
        cause = f"malformed reply from {model.endpoint} ({exc})"
    else:
        cause = describe_failure(exc, model, timeout_s(model))
    return f"model {model.alias}: {cause}" + (f"; gave up after {tries} tries" if tries > 1 else "")
