"""Model faults DataDesigner 0.9 mishandles, handled where its requests are made.

- A model that stops answering -- connection refused (its server died), 429s or quota errors
  that never clear, 5xx. DataDesigner treats each failed request as its row's problem: it
  defers the row and retries it some rounds, then drops it (connection errors, 5xx: the batch
  is checkpointed without it, so a resumed run never asks again -- rows lost), or, for 429s,
  retries without end (DataDesigner #575). Here such a request is retried with backoff instead,
  inside DataDesigner's own request attempt (so its admission control still sees every 429). A
  breaker shared by the requests of one `create()` trips when none has been answered for
  `give_up_s` since these failures began: it calls `on_trip` (the runner cancels `create()`
  the way DataDesigner's own Ctrl-C path does: batches in flight are discarded, never
  checkpointed) and refuses every later request; the runner then stops the run with one line,
  its unfinished rows pending for the same command to resume. A request that alone keeps
  failing while others are answered is handed back to DataDesigner after `give_up_s`: that is
  a fault of its row, counted by reason.
- A 200 whose body is not JSON (a proxy's error page, a cut connection) is final for
  DataDesigner; a 5xx is retried. It is the same transient fault, so it is retried the same.

Both wrap one method of DataDesigner's request executor, installed once per process and
inert unless a breaker is set for the `create()` under way. The retry loop is written here
rather than with a retry library: what ends it is shared by every request of the run (the
breaker), and each try must go back through DataDesigner's own attempt (its admission lease).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from bashgym_designer.constrain import base_alias

_lock = threading.Lock()
_installed = False
_breaker: Breaker | None = None

FIRST_BACKOFF_S = 0.25  # doubled per try of one request, with jitter, up to MAX_BACKOFF_S
MAX_BACKOFF_S = 10.0
# What each kind of unavailability is called in the one line that stops a run.
_WORDS = {
    "rate_limit": "rate limited (429)",
    "quota_exceeded": "out of quota (429)",
    "api_connection": "connection refused or lost",
    "internal_server": "server error (5xx)",
}


class Breaker:
    """Trips when no request of the run has been answered for `give_up_s` while requests
    failed for unavailability (see the module docstring). Thread-safe: DataDesigner calls
    models from its event loop and from worker threads."""

    def __init__(self, give_up_s: float, on_trip: Callable[[], None] | None = None) -> None:
        self.give_up_s = give_up_s
        self.on_trip = on_trip
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.failing_since: float | None = None  # first failure since the last answer
        self.last_kind = ""
        self.model = self.alias = ""  # the model whose failure tripped it
        # Per model: tries that failed and were tried again (DataDesigner never sees them), and
        # requests refused once tripped (never sent, though DataDesigner counts them failed).
        self.retried: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()

    @property
    def tripped(self) -> bool:
        return self._stop.is_set()

    def answered(self) -> None:
        with self._lock:
            self.failing_since = None

    def failed(self, kind: str, model: str, alias: str = "") -> None:
        """Count a failed try of `model` (through `alias`); trip when none has been answered
        for `give_up_s`."""
        with self._lock:
            now = time.monotonic()
            if self.failing_since is None:
                self.failing_since = now
            trip = not self._stop.is_set() and now - self.failing_since >= self.give_up_s
            if trip:
                self.last_kind, self.model, self.alias = kind, model, alias
                self._stop.set()
        if trip and self.on_trip is not None:
            self.on_trip()

    def count_retry(self, model: str) -> None:
        with self._lock:
            self.retried[model] += 1

    def refuse(self, model: str) -> bool:
        """True (and counted) when a request must not be sent: the breaker tripped."""
        if not self._stop.is_set():
            return False
        with self._lock:
            self.refused[model] += 1
        return True

    def failed_requests(self) -> Counter[str]:
        """Per model, what DataDesigner's count of failed requests misses (may be negative)."""
        out = Counter(self.retried)
        out.subtract(self.refused)
        return out

    def delay(self, tries: int, first_failure: float, retry_after: float | None) -> float | None:
        """Seconds before the next try of a request that failed `tries` times (the first at
        `first_failure`); None to stop trying (the breaker tripped, or this request has had
        `give_up_s` to itself)."""
        left = first_failure + self.give_up_s - time.monotonic()
        if self.tripped or left <= 0:
            return None
        backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (tries - 1)) * random.uniform(0.5, 1)
        return min(retry_after if retry_after else backoff, left)

    def wait(self, seconds: float) -> None:
        """Sleep in a worker thread; wakes early when the breaker trips."""
        self._stop.wait(seconds)

    def reason(self) -> str:
        what = _WORDS.get(self.last_kind, self.last_kind or "no answer")
        through = f" (alias {base_alias(self.alias)!r})" if self.alias else ""
        return (
            f"model {self.model!r}{through} stopped answering: {what}, no request answered "
            f"for {self.give_up_s:g}s (designer.rate_limit_give_up_s)"
        )


def _install() -> None:
    global _installed
    # DataDesigner's engine: imported after prepare_environment (bashgym_designer.designer)
    from data_designer.engine.models.clients.errors import ProviderError, ProviderErrorKind
    from data_designer.engine.models.clients.model_request_executor import ModelRequestExecutor

    unavailable = {
        ProviderErrorKind.RATE_LIMIT,
        ProviderErrorKind.QUOTA_EXCEEDED,
        ProviderErrorKind.API_CONNECTION,
        ProviderErrorKind.INTERNAL_SERVER,
    }
    original_retry = ModelRequestExecutor._should_retry
    original_async = ModelRequestExecutor._execute_async_attempt
    original_sync = ModelRequestExecutor._execute_sync_attempt

    def should_retry(self: Any, exc: Any, attempt: int) -> bool:
        non_json = exc.kind == ProviderErrorKind.API_ERROR and exc.status_code == 200
        if non_json and attempt < self._max_attempts() - 1:
            return True
        return original_retry(self, exc, attempt)

    def refuse(breaker: Breaker, executor: Any) -> None:
        if breaker.refuse(_model(executor)):  # a kind DataDesigner defers, never drops
            raise ProviderError(kind=ProviderErrorKind.API_CONNECTION, message=breaker.reason())

    def retry_in(
        breaker: Breaker, exc: BaseException, executor: Any, tries: int, first: float
    ) -> float | None:
        """Seconds before trying `exc`'s request again, or None to hand it to DataDesigner."""
        if not isinstance(exc, ProviderError) or exc.kind not in unavailable:
            return None
        model = _model(executor)
        breaker.failed(exc.kind.value, model, str(getattr(executor, "_provider_name", "")))
        wait = breaker.delay(tries, first, exc.retry_after)
        if wait is not None:  # DataDesigner counts the try that it is handed, not these
            breaker.count_retry(model)
        return wait

    async def execute_async(self: Any, domain: Any, call: Any) -> Any:
        breaker = _breaker
        if breaker is None:
            return await original_async(self, domain, call)
        tries, first = 0, 0.0
        while True:
            refuse(breaker, self)
            try:
                result = await original_async(self, domain, call)
            except Exception as exc:
                tries, first = tries + 1, first or time.monotonic()
                wait = retry_in(breaker, exc, self, tries, first)
                if wait is None:
                    raise
                await asyncio.sleep(wait)  # cancelled with create() when the breaker trips
                continue
            breaker.answered()
            return result

    def execute_sync(self: Any, domain: Any, call: Any) -> Any:
        breaker = _breaker
        if breaker is None:
            return original_sync(self, domain, call)
        tries, first = 0, 0.0
        while True:
            refuse(breaker, self)
            try:
                result = original_sync(self, domain, call)
            except Exception as exc:
                tries, first = tries + 1, first or time.monotonic()
                wait = retry_in(breaker, exc, self, tries, first)
                if wait is None:
                    raise
                breaker.wait(wait)
                continue
            breaker.answered()
            return result

    ModelRequestExecutor._should_retry = should_retry
    ModelRequestExecutor._execute_async_attempt = execute_async
    ModelRequestExecutor._execute_sync_attempt = execute_sync
    _installed = True


def _model(executor: Any) -> str:
    return str(getattr(executor, "_model_id", None) or "unknown model")


@contextlib.contextmanager
def guarded(give_up_s: float, on_trip: Callable[[], None] | None = None) -> Iterator[Breaker]:
    """Requests of the `create()` inside this block go through a fresh breaker."""
    global _breaker
    with _lock:
        if not _installed:
            _install()
        _breaker = Breaker(give_up_s, on_trip)
        breaker = _breaker
    try:
        yield breaker
    finally:
        with _lock:
            _breaker = None
