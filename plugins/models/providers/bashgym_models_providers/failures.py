"""What went wrong with a model call, in one line, and whether trying again can help.

litellm wraps every failure (a refused connection, a cut one, a 200 whose body is not JSON) in
its own exception types, most of them an `InternalServerError` with status 500, and keeps the
real cause in the exception chain. Both questions are answered from that chain, so the one line
a user reads names the real cause ("connection refused at …", "malformed reply from …"), and a
retry policy treats a malformed 200 like the transient fault it is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bashgym_models_providers.session import ResolvedModel

# Statuses worth another try: timeouts, conflicts, rate limits, server errors and overload.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
# Names in the chain that mean the connection failed or broke (openai, httpx, aiohttp).
CONNECTION_ERRORS = frozenset(
    {"APIConnectionError", "ConnectError", "ReadError", "RemoteProtocolError",
     "ServerDisconnectedError", "ClientConnectorError", "ClientOSError"}
)  # fmt: skip


def chain_of(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes, outermost first."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 20:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _refused(chain: list[BaseException]) -> bool:
    text = " ".join(str(c) for c in chain)
    return any(isinstance(c, ConnectionRefusedError) for c in chain) or "Connection refused" in text


def _malformed(chain: list[BaseException]) -> bool:
    return any(isinstance(c, json.JSONDecodeError) for c in chain)


def _timed_out(exc: BaseException, chain: list[BaseException]) -> bool:
    status = getattr(exc, "status_code", None)
    return (
        type(exc).__name__ == "Timeout"
        or status == 408
        or any(isinstance(c, TimeoutError) for c in chain)
    )


def _connection_lost(chain: list[BaseException]) -> bool:
    return any(
        type(c).__name__ in CONNECTION_ERRORS or isinstance(c, ConnectionError) for c in chain
    )


def is_transient(exc: BaseException) -> bool:
    """True when the same request may well succeed later: the connection failed or broke, it
    timed out, the body was not JSON, or the status is a rate limit or a server error. A bad
    request, key or model id (400, 401, 403, 404, 413, 422) fails the same way every time."""
    chain = chain_of(exc)
    if _refused(chain) or _malformed(chain) or _timed_out(exc, chain) or _connection_lost(chain):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status in TRANSIENT_STATUS


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds) on a rate limit or overload, when it sent one."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) * scale, 0.0)
        except (TypeError, ValueError):
            continue  # an HTTP date: ignored, the backoff decides
    return None


def describe_failure(exc: BaseException, resolved: ResolvedModel | None, timeout: float) -> str:
    """One line for a failed call: connection refused or lost, timeout, a malformed reply,
    401, 404, or the status with the server's message."""
    where = resolved.endpoint if resolved else "the endpoint"
    chain = chain_of(exc)
    if _refused(chain):
        return f"connection refused at {where} (is the server running?)"
    if _timed_out(exc, chain):
        return f"timed out after {timeout:g}s waiting for {where}"
    if _malformed(chain):
        return f"malformed reply from {where} (a body that is not JSON)"
    status = getattr(exc, "status_code", None)
    if _connection_lost(chain) and status in (None, 500):
        return f"connection to {where} lost before an answer (did the server stop?)"
    message = _server_message(exc)
    if status in (401, 403):
        env = resolved.api_key_env if resolved else None
        hint = f" (check {env})" if env else ""
        return f"{status} unauthorized: the endpoint rejected the API key{hint}: {message}"
    if status == 404:
        model = resolved.model if resolved else "?"
        return f"404 not found: model {model!r} at {where}: {message}"
    if isinstance(status, int):
        return f"HTTP {status} from {where}: {message}"
    return f"{type(exc).__name__}: {message}"


def _server_message(exc: BaseException) -> str:
    """The server's own message, without litellm's `litellm.XError: XException - ` prefixes."""
    lines = str(getattr(exc, "message", None) or exc).strip().splitlines() or [""]
    text = lines[0]
    text = text.rsplit(" - ", 1)[-1] if " - " in text else text
    try:  # Anthropic errors arrive as the raw JSON body
        body = json.loads(text)
        text = body.get("error", {}).get("message", text)
    except (ValueError, AttributeError):
        pass
    return text[:300]
