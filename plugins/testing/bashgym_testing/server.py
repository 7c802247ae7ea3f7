"""A scripted model server: the OpenAI and Anthropic HTTP APIs, answered from a script.

Tests (ours and third-party plugin authors') point real clients -- the ``openai`` and
``anthropic`` SDKs, DataDesigner, the ``claude`` CLI -- at ``127.0.0.1`` instead of a real LLM:

    with ScriptedModelServer() as server:
        server.script(Reply("hi"), Reply(tool_calls=[ToolUse("Bash", {"command": "ls"})]))
        server.inject(Fault.status(429), times=2)
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")

Speaks ``POST /v1/chat/completions`` (plain and SSE), ``POST /v1/messages`` (plain and SSE, any
query string such as ``?beta=true``), ``POST /v1/messages/count_tokens`` and ``GET /v1/models``.
Each completion request takes the next scripted turn (FIFO, across both APIs); with the script
empty, rules answer, then defaults: a JSON instance for a ``<response_schema>`` prompt, a fenced
program for a DataDesigner code prompt, else an echo of the prompt.

Built on the stdlib ``http.server`` on purpose: a pytest plugin shipped to third parties must not
pull in a web framework, and faults need control at the socket level (truncated bodies, closing
without a response, holding a connection open) that frameworks hide. ``disable_nagle_algorithm``
avoids a 40 ms delayed-ACK stall per request and a large ``request_queue_size`` avoids connection
resets above ~32 parallel clients.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "Fault",
    "RecordedRequest",
    "Reply",
    "ScriptedModelServer",
    "ToolUse",
    "schema_instance",
]


@dataclass
class ToolUse:
    """One tool call in a reply; ``id`` is generated (``call_…`` / ``toolu_…``) when None.
    ``arguments`` given as a string is sent as-is, so a test can send malformed JSON."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """One assistant turn. ``usage`` is ``{"input_tokens": n, "output_tokens": m}`` (OpenAI key
    names also accepted); counted approximately in words when None. ``stop_reason`` may use
    either API's vocabulary. ``delay`` is added to the server's ``latency``."""

    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    model: str | None = None
    delay: float = 0.0


@dataclass
class Fault:
    """A failure served instead of a reply. Build with the class methods."""

    kind: Literal["status", "timeout", "malformed", "disconnect"]
    code: int = 0
    body: Any = None
    retry_after: float | None = None
    seconds: float = 0.0

    @classmethod
    def status(cls, code: int, body: Any = None, retry_after: float | None = None) -> Fault:
        """HTTP ``code`` with an error body shaped like the API called (or ``body``)."""
        return cls("status", code=code, body=body, retry_after=retry_after)

    @classmethod
    def timeout(cls, seconds: float) -> Fault:
        """Hold the connection ``seconds`` without answering, then close it."""
        return cls("timeout", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """200 with a body that is not valid JSON (a broken SSE event for streams)."""
        return cls("malformed")

    @classmethod
    def disconnect(cls) -> Fault:
        """Close the socket without sending any response."""
        return cls("disconnect")


Api = Literal["openai", "anthropic", "other"]


@dataclass
class RecordedRequest:
    """A request as the server saw it. ``headers`` keys are lower-case; ``body`` is parsed JSON."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any] | None
    api: Api
    timestamp: float
    raw_body: bytes = b""

    @property
    def model(self) -> str | None:
        return (self.body or {}).get("model")

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))

    @property
    def api_key(self) -> str | None:
        """The credential sent, from ``x-api-key`` or ``Authorization: Bearer``."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def system_text(self) -> str:
        """Anthropic ``system`` or the OpenAI system/developer messages, as text."""
        parts = [_text_of((self.body or {}).get("system"))]
        parts += [
            _text_of(m.get("content"))
            for m in self.messages
            if m.get("role") in ("system", "developer")
        ]
        return "\n".join(p for p in parts if p)

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (text blocks and tool results, joined by newlines)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text_of(message.get("content"))
        return ""


Turn = Reply | Fault | str | Callable[[RecordedRequest], Reply | Fault | str]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for block in content:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    out.append(block["text"])
                elif block.get("type") == "tool_result":
                    out.append(_text_of(block.get("content")))
        return "\n".join(p for p in out if p)
    return str(content)


# ---------------------------------------------------------------------------------------------
# Minimal JSON Schema instances


_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "duration": "P1D",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "url": "https://example.com/",
    "uri-reference": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "json-pointer": "/a",
    "regex": ".*",
}
_MAX_DEPTH = 40


def schema_instance(schema: dict[str, Any] | bool) -> Any:
    """Return a deterministic small instance that validates against a JSON Schema.

    Hand-written rather than a dependency: tests need the same minimal-but-populated value on
    every run (hypothesis-jsonschema is random and heavy) and plugin authors get it for free.
    Covers type/const/enum, object properties/required/minProperties, arrays (items, prefixItems,
    minItems/maxItems, uniqueItems), string minLength/maxLength/format, integer/number bounds and
    multipleOf, boolean, null, anyOf/oneOf/allOf and ``$ref`` into ``$defs``/``definitions``.
    Not covered: ``pattern``, ``not``, ``if``/``then``, ``dependentRequired``.
    Arrays get at least one item and optional properties are filled near the top, so the value
    reads as populated data; nullable branches are avoided unless recursion runs deep.
    """
    return _Instance(schema if isinstance(schema, dict) else {}).make(schema, 0, 0)


class _Instance:
    def __init__(self, root: dict[str, Any]):
        self.root = root

    def resolve(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if not ref.startswith("#"):
                raise ValueError(f"only local $ref is supported: {ref}")
            target: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                target = target[part.replace("~1", "/").replace("~0", "~")]
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings} if isinstance(target, dict) else target
            seen += 1
            if seen > _MAX_DEPTH:
                raise ValueError(f"$ref cycle at {ref}")
        return schema

    def merge_all_of(self, schema: dict[str, Any]) -> dict[str, Any]:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for sub in schema["allOf"]:
            sub = self.resolve(sub)
            if isinstance(sub, dict) and "allOf" in sub:
                sub = self.merge_all_of(sub)
            if not isinstance(sub, dict):
                continue
            for key, value in sub.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = sorted(set(merged.get("required", [])) | set(value))
                elif (
                    key in ("minimum", "minLength", "minItems", "exclusiveMinimum")
                    and key in merged
                ):
                    merged[key] = max(merged[key], value)
                elif (
                    key in ("maximum", "maxLength", "maxItems", "exclusiveMaximum")
                    and key in merged
                ):
                    merged[key] = min(merged[key], value)
                else:
                    merged.setdefault(key, value)
        return merged

    def make(self, schema: Any, depth: int, variant: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError("schema recursion too deep for a finite instance")
        schema = self.resolve(schema)
        if schema is True or schema is None or schema == {}:
            return "scripted"
        if schema is False:
            raise ValueError("no instance satisfies the schema `false`")
        if "allOf" in schema:
            schema = self.merge_all_of(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][variant % len(schema["enum"])]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [self.resolve(o) for o in schema[key]]
                chosen = self.pick_branch(options, depth)
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                branch = {**rest, **chosen} if isinstance(chosen, dict) else chosen
                return self.make(branch, depth + 1, variant)
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            kind = non_null[0] if non_null else "null"
        if kind is None:
            if "properties" in schema or "required" in schema or "additionalProperties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
            elif "minimum" in schema or "maximum" in schema:
                kind = "number"
            else:
                kind = "string"
        return getattr(self, f"make_{kind}")(schema, depth, variant)

    def pick_branch(self, options: list[Any], depth: int) -> Any:
        def is_null(o: Any) -> bool:
            return isinstance(o, dict) and (o.get("type") == "null" or o.get("const", 1) is None)

        if depth > 8:  # deep in a recursive structure: stop at null if the schema allows it
            for option in options:
                if is_null(option):
                    return option
        for option in options:
            if not is_null(option):
                return option
        return options[0]

    def make_object(self, schema: dict[str, Any], depth: int, variant: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name in required:
            out[name] = self.make(props.get(name, {}), depth + 1, 0)
        if depth <= 4:
            for name, sub in props.items():
                if name not in out:
                    out[name] = self.make(sub, depth + 1, 0)
        extra = schema.get("additionalProperties", True)
        i = 0
        while len(out) < schema.get("minProperties", 0) and extra is not False:
            out[f"key{i}"] = self.make(extra if isinstance(extra, dict) else {}, depth + 1, i)
            i += 1
        return out

    def make_array(self, schema: dict[str, Any], depth: int, variant: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        items = schema.get("items", {})
        if isinstance(items, list):  # draft-4 tuple form
            prefix, items = items, schema.get("additionalItems", {})
        out = [self.make(s, depth + 1, i) for i, s in enumerate(prefix or [])]
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems")
        want = max(lo, len(out), 1 if (hi is None or hi >= 1) and items is not False else 0)
        if hi is not None:
            want = min(want, hi)
        while len(out) < want:
            out.append(self.make(items, depth + 1, len(out)))
        return out

    def make_string(self, schema: dict[str, Any], depth: int, variant: int) -> str:
        value = _FORMATS.get(schema.get("format", ""), "scripted")
        if variant and value == "scripted":
            value = f"scripted{variant}"
        value = value.ljust(schema.get("minLength", 0), "x")
        if "maxLength" in schema:
            value = value[: schema["maxLength"]]
        return value

    def make_integer(self, schema: dict[str, Any], depth: int, variant: int) -> int:
        return int(self.make_number(schema, depth, variant, integer=True))

    def make_number(
        self, schema: dict[str, Any], depth: int, variant: int, integer: bool = False
    ) -> float:
        step = 1 if integer else 0.5
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if xlo is True:  # draft-4 booleans
            xlo, lo = lo, None
        if xhi is True:
            xhi, hi = hi, None
        if isinstance(xlo, (int, float)) and not isinstance(xlo, bool):
            lo = max(lo, xlo + step) if lo is not None else xlo + step
        if isinstance(xhi, (int, float)) and not isinstance(xhi, bool):
            hi = min(hi, xhi - step) if hi is not None else xhi - step
        if lo is not None and hi is not None and hi < lo and not integer:
            lo = hi = (lo + hi) / 2  # tight exclusive float bounds
        value = lo if lo is not None else (min(0, hi) if hi is not None else 0)
        if integer:
            value = -(-value // 1)  # ceil
        value += variant
        if hi is not None and value > hi:
            value = hi if not integer else hi // 1
        multiple = schema.get("multipleOf")
        if multiple:
            value = -(-value // multiple) * multiple
        return value

    def make_boolean(self, schema: dict[str, Any], depth: int, variant: int) -> bool:
        return bool(variant % 2)

    def make_null(self, schema: dict[str, Any], depth: int, variant: int) -> None:
        return None


# ---------------------------------------------------------------------------------------------
# Defaults for DataDesigner prompts (data_designer/engine/models/recipes/response_recipes.py)

# The instructions also name the tag in prose ("... within <response_schema> markup tags."), so
# take the innermost opening tag before the closing one.
_SCHEMA_RE = re.compile(
    r"<response_schema>((?:(?!<response_schema>).)*?)</response_schema>", re.DOTALL
)
_CODE_RE = re.compile(r"Your response must be code written in ([\w+#.-]+?)\.\s*$", re.MULTILINE)
_PROGRAMS = {
    "python": "def solution():\n    return 42\n",
    "bash": "echo hello\n",
    "sh": "echo hello\n",
    "sql": "SELECT 1;\n",
    "javascript": "console.log(42);\n",
    "typescript": "console.log(42);\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(42) }\n',
    "rust": 'fn main() {\n    println!("42");\n}\n',
    "c": "int main(void) { return 0; }\n",
    "cpp": "int main() { return 0; }\n",
    "java": "class Main { public static void main(String[] a) { System.out.println(42); } }\n",
    "ruby": "puts 42\n",
}


def default_reply(request: RecordedRequest) -> Reply:
    """The built-in answer: schema instance, fenced program, or an echo of the prompt."""
    text = request.last_user_text
    schema_matches = _SCHEMA_RE.findall(text)
    if schema_matches:
        try:
            instance = schema_instance(json.loads(schema_matches[-1]))
        except (ValueError, KeyError, TypeError) as exc:
            return Reply(f"Scripted server could not build an instance of the schema: {exc}")
        return Reply("```json\n" + json.dumps(instance, indent=2) + "\n```")
    code_match = _CODE_RE.search(text)
    if code_match:
        lang = code_match.group(1).lower()
        program = _PROGRAMS.get(lang, "42\n")
        return Reply(f"```{lang}\n{program}```")
    gist = " ".join(text.split())[:60]
    return Reply(f"Scripted answer to: {gist}")


# ---------------------------------------------------------------------------------------------
# Wire formats

_OPENAI_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ERROR_TYPES = {  # code -> (anthropic error type, openai error type, openai error code)
    400: ("invalid_request_error", "invalid_request_error", None),
    401: ("authentication_error", "invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "invalid_request_error", None),
    404: ("not_found_error", "invalid_request_error", "model_not_found"),
    413: ("request_too_large", "invalid_request_error", None),
    429: ("rate_limit_error", "requests", "rate_limit_exceeded"),
    500: ("api_error", "server_error", None),
    503: ("overloaded_error", "server_error", "service_unavailable"),
    529: ("overloaded_error", "server_error", None),
}
_MESSAGES = {
    401: "Incorrect API key provided.",
    403: "Permission denied.",
    404: "The model `{model}` does not exist or you do not have access to it.",
    429: "Rate limit reached. Please try again later.",
    500: "The server had an error while processing your request.",
    503: "The service is temporarily overloaded.",
    529: "Overloaded",
}


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    return len(json.dumps(value).split()) if value is not None else 0


def _error_body(api: Api, code: int, model: str | None) -> dict[str, Any]:
    atype, otype, ocode = _ERROR_TYPES.get(
        code, ("api_error" if code >= 500 else "invalid_request_error",) * 2 + (None,)
    )
    message = _MESSAGES.get(code, f"Scripted error {code}.").format(model=model)
    if api == "anthropic":
        return {"type": "error", "error": {"type": atype, "message": message}}
    return {
        "error": {
            "message": message,
            "type": otype,
            "param": "model" if code == 404 else None,
            "code": ocode,
        }
    }


def _pieces(text: str, words_per_piece: int = 3) -> list[str]:
    tokens = re.findall(r"\s*\S+|\s+$", text)
    return [
        "".join(tokens[i : i + words_per_piece]) for i in range(0, len(tokens), words_per_piece)
    ]


def _halves(s: str) -> list[str]:
    mid = len(s) // 2
    return [p for p in (s[:mid], s[mid:]) if p]


# ---------------------------------------------------------------------------------------------
# The server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True
    owner: ScriptedModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-reply (timeouts, disconnect faults) are normal here; anything
        else is kept in ``owner.errors`` for the test to see, instead of printed to stderr."""
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, ConnectionError | TimeoutError):
            with self.owner._lock:
                self.owner._errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "ScriptedModelServer/1.0"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self.server.owner._serve(self)

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET


class ScriptedModelServer:
    """Serve scripted turns over the OpenAI and Anthropic APIs on a local port (threaded)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self.port = port
        self.latency: float = 0.0
        self.models: list[str] = ["scripted-model"]
        self._lock = threading.Lock()
        self._queue: deque[Turn] = deque()
        self._rules: list[tuple[Callable[[RecordedRequest], bool], Turn]] = []
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._conns: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-model-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping on latency or Fault.timeout
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:  # idle keep-alive connections would otherwise outlive the server
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    # -- scripting ---------------------------------------------------------------------------

    def script(self, *turns: Turn) -> ScriptedModelServer:
        """Queue turns (Reply, Fault, str, or ``callable(request) -> Reply | Fault``), FIFO."""
        with self._lock:
            self._queue.extend(turns)
        return self

    def inject(self, fault: Fault | Reply, times: int = 1) -> ScriptedModelServer:
        """Put ``times`` copies of ``fault`` at the front of the queue."""
        with self._lock:
            self._queue.extendleft([fault] * times)
        return self

    def add_rule(
        self, match: str | re.Pattern[str] | Callable[[RecordedRequest], bool], reply: Turn
    ) -> ScriptedModelServer:
        """Answer with ``reply`` when the queue is empty and ``match`` (a regex searched in the
        last user message, or a predicate on the request) holds. Rules are tried in order."""
        if isinstance(match, (str, re.Pattern)):
            pattern = re.compile(match, re.DOTALL) if isinstance(match, str) else match

            def predicate(r: RecordedRequest) -> bool:
                return bool(pattern.search(r.last_user_text))
        else:
            predicate = match
        with self._lock:
            self._rules.append((predicate, reply))
        return self

    def reset(self) -> None:
        """Clear script, rules, records, errors and latency."""
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self._requests.clear()
            self._errors.clear()
        self.latency = 0.0

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def completions(self) -> list[RecordedRequest]:
        """Only the chat-completion / messages requests (the ones that take a turn)."""
        return [r for r in self.requests if self._takes_turn(r)]

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by callable turns or rules (each was answered with a 500)."""
        with self._lock:
            return list(self._errors)

    @property
    def pending(self) -> int:
        """Number of scripted turns not yet served."""
        with self._lock:
            return len(self._queue)

    # -- serving -----------------------------------------------------------------------------

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    @staticmethod
    def _takes_turn(req: RecordedRequest) -> bool:
        return req.method == "POST" and (
            req.path.endswith("/chat/completions") or req.path.endswith("/messages")
        )

    def _next_turn(self, req: RecordedRequest) -> Reply | Fault:
        with self._lock:
            turn: Turn | None = self._queue.popleft() if self._queue else None
            rules = list(self._rules)
        if turn is None:
            for predicate, reply in rules:
                if predicate(req):
                    turn = reply
                    break
        if turn is None:
            return default_reply(req)
        if callable(turn) and not isinstance(turn, (Reply, Fault)):
            turn = turn(req)
        if isinstance(turn, str):
            turn = Reply(turn)
        if not isinstance(turn, (Reply, Fault)):
            raise TypeError(f"a scripted turn must be a Reply, Fault or str, got {turn!r}")
        return turn

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):024d}"

    def _read_request(self, h: _Handler) -> RecordedRequest:
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                raw += h.rfile.read(size)
                h.rfile.readline()
        else:
            raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        parts = urlsplit(h.path)
        path = parts.path
        if path.endswith("/chat/completions"):
            api: Api = "openai"
        elif "/messages" in path:
            api = "anthropic"
        else:
            api = "other"
        return RecordedRequest(
            method=h.command,
            path=path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body if isinstance(body, dict) else None,
            api=api,
            timestamp=time.time(),
            raw_body=raw,
        )

    def _serve(self, h: _Handler) -> None:
        try:
            req = self._read_request(h)
        except (OSError, ValueError):
            h.close_connection = True
            return
        with self._lock:
            self._requests.append(req)
        try:
            if self._takes_turn(req):
                try:
                    turn = self._next_turn(req)
                except Exception as exc:  # noqa: BLE001 - a test's callable failed: surface it, don't hang
                    with self._lock:
                        self._errors.append(exc)
                    self._send_json(
                        h, 500, _error_body(req.api, 500, req.model) | {"scripted_error": repr(exc)}
                    )
                    return
                delay = self.latency + (turn.delay if isinstance(turn, Reply) else 0.0)
                if delay > 0 and self._stopping.wait(delay):
                    h.close_connection = True
                    return
                if isinstance(turn, Fault):
                    self._serve_fault(h, req, turn)
                elif req.path.endswith("/chat/completions"):
                    self._serve_openai(h, req, turn)
                else:
                    self._serve_anthropic(h, req, turn)
            elif req.path.endswith("/messages/count_tokens"):
                if self.latency > 0 and self._stopping.wait(self.latency):
                    return
                tokens = max(
                    1,
                    _words(req.system_text)
                    + sum(_words(_text_of(m.get("content"))) for m in req.messages),
                )
                self._send_json(h, 200, {"input_tokens": tokens})
            elif req.method == "GET" and req.path.rstrip("/").endswith("/models"):
                self._send_json(h, 200, self._models_body())
            elif req.method == "GET" and "/models/" in req.path:
                self._send_json(h, 200, self._model_entry(req.path.rsplit("/", 1)[-1]))
            else:
                self._send_json(h, 404, _error_body(req.api, 404, None) | {"path": req.path})
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            h.close_connection = True

    def _models_body(self) -> dict[str, Any]:
        data = [self._model_entry(m) for m in self.models]
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": first,
            "last_id": last,
        }

    @staticmethod
    def _model_entry(model: str) -> dict[str, Any]:
        return {
            "id": model,
            "object": "model",
            "type": "model",
            "display_name": model,
            "created": 0,
            "created_at": "2024-01-01T00:00:00Z",
            "owned_by": "bashgym",
        }

    # -- responses ---------------------------------------------------------------------------

    @staticmethod
    def _send_json(
        h: _Handler, code: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = (
            body
            if isinstance(body, bytes)
            else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        )
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.send_header("request-id", f"req_scripted_{int(time.time() * 1e6)}")
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _serve_fault(self, h: _Handler, req: RecordedRequest, fault: Fault) -> None:
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                ra = fault.retry_after
                headers["retry-after"] = str(int(ra)) if float(ra).is_integer() else str(ra)
                headers["retry-after-ms"] = str(int(ra * 1000))
            body = (
                fault.body
                if fault.body is not None
                else _error_body(req.api, fault.code, req.model)
            )
            self._send_json(h, fault.code, body, headers)
        elif fault.kind == "malformed":
            if req.stream:
                self._start_sse(h)
                self._sse(
                    h,
                    "message_start" if req.api == "anthropic" else None,
                    '{"type": "message_start", "message": {',
                )
                self._end_sse(h)
            else:
                self._send_json(h, 200, b'{"id": "broken", "choices": [{"message": ')
        elif fault.kind == "timeout":
            self._stopping.wait(fault.seconds)
            h.close_connection = True
        elif fault.kind == "disconnect":
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)

    def _usage(self, req: RecordedRequest, reply: Reply) -> tuple[int, int]:
        given = reply.usage or {}
        inp = given.get("input_tokens", given.get("prompt_tokens"))
        out = given.get("output_tokens", given.get("completion_tokens"))
        if inp is None:
            inp = _words(req.system_text) + sum(
                _words(_text_of(m.get("content"))) for m in req.messages
            )
        if out is None:
            out = _words(reply.text) + sum(
                _words(t.name) + _words(t.arguments) for t in reply.tool_calls
            )
        return max(1, inp), max(1, out)

    def _serve_openai(self, h: _Handler, req: RecordedRequest, reply: Reply) -> None:
        model = reply.model or req.model or self.models[0]
        stop = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        stop = _OPENAI_STOP.get(stop, stop)
        calls = [(t.id or self._new_id("call_"), t) for t in reply.tool_calls]
        inp, out = self._usage(req, reply)
        usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
        base = {
            "id": self._new_id("chatcmpl-"),
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }
        if not req.stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": reply.text or None,
                "refusal": None,
            }
            if calls:
                message["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": t.name, "arguments": t.arguments_json},
                    }
                    for cid, t in calls
                ]
            choice = {"index": 0, "message": message, "finish_reason": stop, "logprobs": None}
            self._send_json(
                h, 200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
            return

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return json.dumps({**base, "object": "chat.completion.chunk", "choices": [choice]})

        self._start_sse(h)
        self._sse(h, None, chunk({"role": "assistant", "content": ""}))
        for piece in _pieces(reply.text):
            self._sse(h, None, chunk({"content": piece}))
        for i, (cid, t) in enumerate(calls):
            head = {
                "index": i,
                "id": cid,
                "type": "function",
                "function": {"name": t.name, "arguments": ""},
            }
            self._sse(h, None, chunk({"tool_calls": [head]}))
            for part in _halves(t.arguments_json):
                self._sse(
                    h, None, chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                )
        self._sse(h, None, chunk({}, stop))
        if ((req.body or {}).get("stream_options") or {}).get("include_usage"):
            self._sse(
                h,
                None,
                json.dumps(
                    {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
                ),
            )
        self._sse(h, None, "[DONE]")
        self._end_sse(h)

    def _serve_anthropic(self, h: _Handler, req: RecordedRequest, reply: Reply) -> None:
        model = reply.model or req.model or self.models[0]
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        stop = _ANTHROPIC_STOP.get(stop, stop)
        blocks: list[dict[str, Any]] = []
        if reply.text or not reply.tool_calls:
            blocks.append({"type": "text", "text": reply.text})
        for t in reply.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": t.id or self._new_id("toolu_"),
                    "name": t.name,
                    "input": t.arguments,  # a string: sent as-is in streams (malformed)
                }
            )
        inp, out = self._usage(req, reply)
        usage = {
            "input_tokens": inp,
            "output_tokens": out,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message = {
            "id": self._new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not req.stream:
            self._send_json(h, 200, message)
            return
        self._start_sse(h)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        self._sse(h, "message_start", json.dumps({"type": "message_start", "message": start}))
        self._sse(h, "ping", json.dumps({"type": "ping"}))
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                opening, deltas = (
                    {"type": "text", "text": ""},
                    [{"type": "text_delta", "text": p} for p in _pieces(block["text"])],
                )
            else:
                opening = {**block, "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": p}
                    for p in _halves(
                        block["input"]
                        if isinstance(block["input"], str)
                        else json.dumps(block["input"])
                    )
                ]
            self._sse(
                h,
                "content_block_start",
                json.dumps({"type": "content_block_start", "index": i, "content_block": opening}),
            )
            for delta in deltas:
                self._sse(
                    h,
                    "content_block_delta",
                    json.dumps({"type": "content_block_delta", "index": i, "delta": delta}),
                )
            self._sse(
                h, "content_block_stop", json.dumps({"type": "content_block_stop", "index": i})
            )
        delta_usage = {"input_tokens": inp, "output_tokens": out}
        self._sse(
            h,
            "message_delta",
            json.dumps(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": delta_usage,
                }
            ),
        )
        self._sse(h, "message_stop", json.dumps({"type": "message_stop"}))
        self._end_sse(h)

    # SSE over chunked transfer encoding keeps HTTP/1.1 connections reusable after a stream.

    @staticmethod
    def _start_sse(h: _Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

    @staticmethod
    def _sse(h: _Handler, event: str | None, data: str) -> None:
        payload = ((f"event: {event}\n" if event else "") + f"data: {data}\n\n").encode()
        h.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    @staticmethod
    def _end_sse(h: _Handler) -> None:
        h.wfile.write(b"0\r\n\r\n")
