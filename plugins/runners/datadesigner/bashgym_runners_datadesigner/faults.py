"""Two model faults DataDesigner 0.9 mishandles, fixed where its requests are made.

- A provider that answers 429 (or "quota exceeded") forever: DataDesigner backs off and tries
  again without end (a peer's most common complaint, DataDesigner #575). A circuit breaker
  counts the time since the last answered request while every request is rate-limited; past
  `give_up_s` it fails each further request as *quota exceeded* — a failure DataDesigner does
  not retry — so the run ends in bounded time, every row counted as `rate limited (429)`.
- A 200 whose body is not JSON (a proxy's error page, a cut connection) is final for
  DataDesigner; a 5xx is retried. It is the same transient fault, so it is retried the same.

Both wrap one method of DataDesigner's request executor, installed once per process and
inert unless a breaker is set for the `create()` under way.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

_lock = threading.Lock()
_installed = False
_breaker: Breaker | None = None


class Breaker:
    """Trips when requests have been rate-limited, with none answered, for `give_up_s`."""

    def __init__(self, give_up_s: float) -> None:
        self.give_up_s = give_up_s
        self.last_answer = time.monotonic()
        self.limited_since: float | None = None
        self.tripped = False

    def answered(self) -> None:
        self.last_answer, self.limited_since = time.monotonic(), None

    def limited(self) -> None:
        now = time.monotonic()
        if self.limited_since is None:
            self.limited_since = now
        if now - max(self.last_answer, self.limited_since) >= self.give_up_s:
            self.tripped = True

    def reason(self) -> str:
        return (
            f"rate limited (429) for {self.give_up_s:g}s with no request answered: gave up "
            "(designer.rate_limit_give_up_s)"
        )


def _install() -> None:
    global _installed
    from data_designer.engine.models.clients.errors import ProviderError, ProviderErrorKind
    from data_designer.engine.models.clients.model_request_executor import ModelRequestExecutor

    limits = {ProviderErrorKind.RATE_LIMIT, ProviderErrorKind.QUOTA_EXCEEDED}
    original_retry = ModelRequestExecutor._should_retry
    original_async = ModelRequestExecutor._execute_async_attempt
    original_sync = ModelRequestExecutor._execute_sync_attempt

    def should_retry(self: Any, exc: Any, attempt: int) -> bool:
        non_json = exc.kind == ProviderErrorKind.API_ERROR and exc.status_code == 200
        if non_json and attempt < self._max_attempts() - 1:
            return True
        return original_retry(self, exc, attempt)

    def gate(exc: BaseException | None) -> None:
        breaker = _breaker
        if breaker is None:
            return
        if exc is None:
            breaker.answered()
        elif isinstance(exc, ProviderError) and exc.kind in limits:
            breaker.limited()

    def refuse(self: Any) -> None:
        breaker = _breaker
        if breaker is not None and breaker.tripped:
            raise ProviderError(kind=ProviderErrorKind.QUOTA_EXCEEDED, message=breaker.reason())

    async def execute_async(self: Any, domain: Any, call: Any) -> Any:
        refuse(self)
        try:
            result = await original_async(self, domain, call)
        except BaseException as exc:
            gate(exc)
            raise
        gate(None)
        return result

    def execute_sync(self: Any, domain: Any, call: Any) -> Any:
        refuse(self)
        try:
            result = original_sync(self, domain, call)
        except BaseException as exc:
            gate(exc)
            raise
        gate(None)
        return result

    ModelRequestExecutor._should_retry = should_retry
    ModelRequestExecutor._execute_async_attempt = execute_async
    ModelRequestExecutor._execute_sync_attempt = execute_sync
    _installed = True


@contextlib.contextmanager
def guarded(give_up_s: float) -> Iterator[Breaker]:
    """Requests of the `create()` inside this block go through a fresh breaker."""
    global _breaker
    with _lock:
        if not _installed:
            _install()
        _breaker = Breaker(give_up_s)
        breaker = _breaker
    try:
        yield breaker
    finally:
        with _lock:
            _breaker = None
