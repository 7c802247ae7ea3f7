"""The API token: every HTTP request and WebSocket handshake without it is refused with 401.

A client sends it as `Authorization: Bearer TOKEN`; a browser opens the dashboard once with
`?token=TOKEN`, which sets an HttpOnly, SameSite=Strict cookie for the pages, their script and
their WebSockets. A pure ASGI middleware (not Starlette's BaseHTTPMiddleware) so WebSocket
handshakes pass through the same check.
"""

from __future__ import annotations

import hmac
import json
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

COOKIE = "bashgym_token"
LOOPBACK = ("127.0.0.1", "::1", "localhost")
REFUSED = (
    "missing or wrong API token: send 'Authorization: Bearer TOKEN' (or open the dashboard "
    "once with ?token=TOKEN)"
)


def needs_token(host: str, require: bool) -> bool:
    """A bind to anything but loopback always needs a token; loopback when settings say so."""
    return require or host not in LOOPBACK


class TokenAuth:
    """ASGI middleware: the request must carry `token` (header, cookie or query)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token

    def _given(self, scope: dict[str, Any]) -> tuple[str | None, bool]:
        """The token the request carries, and whether it came in the query string."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip(), False
        query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if query:
            return query[0], True
        cookie = SimpleCookie(headers.get("cookie", ""))
        return (cookie[COOKIE].value if COOKIE in cookie else None), False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        given, in_query = self._given(scope)
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            if scope["type"] == "http" and in_query:
                return await self.app(scope, receive, _setting_cookie(send, self.token))
            return await self.app(scope, receive, send)
        body = json.dumps({"detail": REFUSED}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        if scope["type"] == "websocket":
            if "websocket.http.response" in scope.get("extensions", {}):
                await send({"type": "websocket.http.response.start", "status": 401,
                            "headers": headers})  # fmt: skip
                await send({"type": "websocket.http.response.body", "body": body})
            else:
                await send({"type": "websocket.close", "code": 1008})
            return None
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return None


def _setting_cookie(send: Any, token: str) -> Any:
    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            headers = [*message["headers"], (b"set-cookie", cookie.encode())]
            message = {**message, "headers": headers}
        await send(message)

    return wrapped
