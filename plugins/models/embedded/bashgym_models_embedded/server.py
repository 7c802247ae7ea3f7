"""An OpenAI-compatible llama.cpp server with parallel slots (continuous batching), run as a child.

Why not `python -m llama_cpp.server`: in llama-cpp-python 0.3.36 that server holds one model
behind a global lock (`llama_outer_lock`/`llama_inner_lock` in `llama_cpp/server/app.py`) and has
no `n_parallel` setting, so concurrent requests queue up one after another. Running several
server processes does not help either: they compete for the same cores and memory bandwidth
(measured on 2 cores: two 1-thread processes ≈ 41 tok/s together, one 2-thread process ≈ 44).

What does help is what llama.cpp's own `llama-server -np N` does: one context whose KV cache
holds N sequences, and one `llama_decode` per step carrying the next token of every active
sequence (plus chunks of newly arrived prompts). Decoding 4 sequences costs little more than
decoding one, because each step reads the weights once. This module does exactly that with the
llama-cpp-python bindings: an engine thread runs the batch loop, a small Starlette app speaks
`/v1/models` and `/v1/chat/completions` (streaming too, JSON-schema constrained output, tools
through the GGUF's own chat template).

Run: `python -m bashgym_models_embedded.server --model PATH --port N [--parallel 4]`.
The process exits when its parent dies (Linux `PR_SET_PDEATHSIG` plus a parent-pid watchdog),
so a killed run never leaves a model server behind.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import ctypes
import json
import os
import queue
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import llama_cpp
import numpy as np
import uvicorn
from llama_cpp import _internals
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


PENALTY_WINDOW = 256  # tokens a frequency/presence penalty looks back over
# A reply with tools stops once it holds the same tool call this many times: a small model can
# fill its whole max_tokens with one call said again and again (once 1,024 tokens, 400 s on
# 2 cores), and no client wants the same call twice in one reply. 0: never stop early.
REPEATED_CALLS = 3


class RequestError(ValueError):
    """A request the server cannot serve (answered 400 with this message)."""


@dataclass
class Job:
    """One chat completion: its prompt tokens, sampling setup and where results go."""

    prompt: list[int]
    max_tokens: int
    stop: list[str]
    sampler: Any
    emit: Any  # callable(kind, payload) called from the engine thread
    grammar: Any = None  # a llama.cpp grammar sampler, checked after `sampler` picks
    cancelled: threading.Event = field(default_factory=threading.Event)
    repeat_limit: int = 0  # stop at this many identical tool calls (0: never)
    # engine state
    seq: int = -1
    n_past: int = 0
    pending: int = -1  # the last sampled token, to feed next step
    out_tokens: int = 0
    raw: bytes = b""
    text: str = ""
    sent: int = 0
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def free_samplers(self) -> None:
        llama_cpp.llama_sampler_free(self.sampler)
        if self.grammar is not None:
            llama_cpp.llama_sampler_free(self.grammar)


class Engine:
    """Owns the model and context; runs the batch loop on its own thread."""

    def __init__(
        self, model_path: str, *, n_ctx: int, parallel: int, threads: int, n_batch: int,
        lora: str | None = None, lora_scale: float = 1.0,
    ) -> None:  # fmt: skip
        self.parallel = parallel
        self.n_ctx = n_ctx  # per slot
        self.n_batch = n_batch
        llama_cpp.llama_backend_init()
        self.model = _internals.LlamaModel(
            path_model=model_path, params=llama_cpp.llama_model_default_params(), verbose=False
        )
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx * parallel
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = parallel
        params.kv_unified = True
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.n_threads = threads
        params.n_threads_batch = threads
        self.ctx = llama_cpp.llama_init_from_model(self.model.model, params)
        if self.ctx is None:
            raise RuntimeError("llama.cpp could not create a context (out of memory?)")
        if lora:
            self._apply_lora(lora, lora_scale)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.vocab = self.model.vocab
        self.batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        meta = self.model.metadata()
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise RuntimeError(f"{model_path} has no chat template (tokenizer.chat_template)")
        piece = self._piece
        self.formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=piece(self.model.token_eos(), special=True).decode(errors="ignore"),
            bos_token=piece(self.model.token_bos(), special=True).decode(errors="ignore"),
        )
        self.add_bos = self.model.add_bos_token()
        self.inbox: queue.Queue[Job] = queue.Queue()
        self.free = list(range(parallel))
        # Prompt tokens whose keys/values each slot still holds: a request sharing a prefix
        # with them (the same system prompt and schema, as DataDesigner's columns send) skips
        # evaluating it again. Prompt evaluation is most of a CPU request's time.
        self.cached: dict[int, list[int]] = {seq: [] for seq in range(parallel)}
        self.active: list[Job] = []
        self.cancelled = 0  # jobs dropped because their client left (shown by /health)
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name="llama-batch", daemon=True)
        self.thread.start()

    # --- helpers -----------------------------------------------------------------------------
    def _apply_lora(self, path: str, scale: float) -> None:
        """Serve the model with a LoRA adapter GGUF (what `llama-server --lora` does): llama.cpp
        checks each tensor against the base's and refuses an adapter of another model."""
        adapter = llama_cpp.llama_adapter_lora_init(self.model.model, path.encode())
        if not adapter:
            raise RuntimeError(f"llama.cpp could not load the LoRA adapter {path} (not a LoRA "
                               "GGUF, or trained on another base model)")  # fmt: skip
        self.lora = adapter  # freed with the model when the process exits
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(scale)
        if llama_cpp.llama_set_adapters_lora(self.ctx, adapters, 1, scales) != 0:
            raise RuntimeError(f"llama.cpp could not apply the LoRA adapter {path}")

    def _piece(self, token: int, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 64, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, special)
        return buf.raw[:n]

    def tokenize(self, text: str) -> list[int]:
        return self.model.tokenize(text.encode(), add_bos=self.add_bos, special=True)

    def make_sampler(
        self, temperature: float, top_p: float, seed: int, frequency: float = 0.0,
        presence: float = 0.0,
    ) -> Any:  # fmt: skip
        """The sampler chain; OpenAI's frequency/presence penalties (over the last
        PENALTY_WINDOW tokens) come first, so greedy decoding honours them too."""
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        if frequency or presence:
            n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
            penalties = llama_cpp.llama_sampler_init_penalties(
                n_vocab, PENALTY_WINDOW, 1.0, frequency, presence
            )
            llama_cpp.llama_sampler_chain_add(chain, penalties)
        if temperature <= 0:
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        else:
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_k(40))
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_p(top_p, 1))
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_temp(temperature))
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_dist(seed))
        return chain

    def make_grammar(self, grammar: str | None) -> Any:
        if grammar is None:
            return None
        g = llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        if not g:
            raise RequestError("the response_format schema could not be compiled")
        return g

    def sample(self, job: Job, idx: int) -> int:
        """The next token: sampled freely, then checked against the grammar, and only when the
        grammar refuses it sampled again over the whole vocabulary with the grammar applied.

        Why: a grammar sampler placed in the chain checks all ~150k candidates at every step
        and halves the speed; the model's own pick is almost always allowed (llama.cpp's
        common sampler does the same)."""
        token = int(llama_cpp.llama_sampler_sample(job.sampler, self.ctx, idx))
        if job.grammar is None:
            return token
        one = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
        single = llama_cpp.llama_token_data_array(one, 1, -1, False)
        llama_cpp.llama_sampler_apply(job.grammar, ctypes.byref(single))
        if one[0].logit == float("-inf"):
            token = self._resample(job, idx)
        llama_cpp.llama_sampler_accept(job.grammar, token)
        return token

    def _resample(self, job: Job, idx: int) -> int:
        n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, idx), (n_vocab,))
        cells = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
        cells["id"], cells["logit"] = np.arange(n_vocab), logits
        data = cells.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data))
        every = llama_cpp.llama_token_data_array(data, n_vocab, -1, False)
        llama_cpp.llama_sampler_apply(job.grammar, ctypes.byref(every))
        llama_cpp.llama_sampler_apply(job.sampler, ctypes.byref(every))
        return int(cells["id"][every.selected])

    # --- the batch loop ------------------------------------------------------------------------
    def _admit(self, block: bool) -> None:
        while self.free:
            try:
                job = self.inbox.get(block=block and not self.active, timeout=0.5)
            except queue.Empty:
                return
            if job.cancelled.is_set():
                job.free_samplers()
                self.cancelled += 1
                continue
            shared = {seq: _common(self.cached[seq], job.prompt) for seq in self.free}
            job.seq = max(self.free, key=lambda seq: shared[seq])
            self.free.remove(job.seq)
            keep = min(shared[job.seq], len(job.prompt) - 1)  # the last token yields logits
            llama_cpp.llama_memory_seq_rm(self.memory, job.seq, keep, -1)
            job.n_past = keep
            self.active.append(job)
            block = False

    def _add(self, n: int, token: int, pos: int, seq: int, logits: bool) -> None:
        b = self.batch
        b.token[n] = token
        b.pos[n] = pos
        b.n_seq_id[n] = 1
        b.seq_id[n][0] = seq
        b.logits[n] = logits

    def _loop(self) -> None:
        while not self.stopping:
            try:
                self._step()
            except Exception as exc:  # noqa: BLE001 -- fail the requests, keep serving
                for job in list(self.active):
                    job.emit("error", f"generation failed: {type(exc).__name__}: {exc}")
                    self._finish(job, None)

    def _step(self) -> None:
        self._admit(block=True)
        for job in [j for j in self.active if j.cancelled.is_set()]:
            self.cancelled += 1
            self._finish(job, "cancelled")
        if not self.active:
            return
        n = 0
        outputs: list[tuple[Job, int]] = []
        # Generating slots first (one token each), then prompt chunks fill the rest.
        for job in self.active:
            if job.pending >= 0:
                self._add(n, job.pending, job.n_past, job.seq, True)
                outputs.append((job, n))
                job.n_past += 1
                n += 1
        for job in self.active:
            if job.pending < 0 and n < self.n_batch:
                take = min(len(job.prompt) - job.n_past, self.n_batch - n)
                for i in range(take):
                    last = job.n_past + i == len(job.prompt) - 1
                    self._add(n, job.prompt[job.n_past + i], job.n_past + i, job.seq, last)
                    if last:
                        outputs.append((job, n))
                    n += 1
                job.n_past += take
        self.batch.n_tokens = n
        rc = llama_cpp.llama_decode(self.ctx, self.batch)
        if rc != 0:
            for job in list(self.active):
                job.emit("error", f"llama_decode failed (code {rc})")
                self._finish(job, None)
            for seq in self.cached:  # nothing cached is to be trusted after a failed decode
                llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)
                self.cached[seq] = []
            return
        for job, idx in outputs:
            self._on_token(job, self.sample(job, idx))

    def _on_token(self, job: Job, token: int) -> None:
        if llama_cpp.llama_vocab_is_eog(self.vocab, token):
            self._finish(job, "stop")
            return
        job.out_tokens += 1
        job.text += job.decoder.decode(self._piece(token))
        for stop in job.stop:
            at = job.text.find(stop, max(0, job.sent - len(stop)))
            if at >= 0:
                job.text = job.text[:at]
                self._finish(job, "stop")
                return
        if job.out_tokens >= job.max_tokens or job.n_past + 1 >= self.n_ctx:
            self._finish(job, "length")
            return
        if job.repeat_limit and repeats_a_call(job.text, job.repeat_limit):
            self._finish(job, "stop")
            return
        hold = max((len(s) - 1 for s in job.stop), default=0)
        upto = len(job.text) - hold
        if upto > job.sent:
            job.emit("delta", job.text[job.sent : upto])
            job.sent = upto
        job.pending = token

    def _finish(self, job: Job, reason: str | None) -> None:
        if reason is not None and reason != "cancelled":
            job.text += job.decoder.decode(b"", final=True)
            if len(job.text) > job.sent:
                job.emit("delta", job.text[job.sent :])
            job.emit("done", {"reason": reason, "tokens": job.out_tokens, "text": job.text})
        self.active.remove(job)
        self.cached[job.seq] = job.prompt[: min(job.n_past, len(job.prompt))]
        job.free_samplers()
        self.free.append(job.seq)

    def submit(self, job: Job) -> None:
        self.inbox.put(job)


def repeats_a_call(text: str, limit: int) -> bool:
    """True when `text` has just closed a tool call it now holds `limit` times (the same name
    and arguments, key order aside). Checked only as a `</tool_call>` closes, so a long answer
    costs one `endswith` per token."""
    if not text.rstrip().endswith("</tool_call>"):
        return False
    seen: dict[str, int] = {}
    for raw in TOOL_CALL.findall(text):
        try:
            key = json.dumps(json.loads(raw), sort_keys=True)
        except ValueError:
            key = raw
        seen[key] = seen.get(key, 0) + 1
        if seen[key] >= limit:
            return True
    return False


def _common(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --- the HTTP side --------------------------------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _messages(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages → what HF chat templates expect (text content, dict tool arguments)."""
    out = []
    for m in raw:
        msg = {**m, "content": _text(m.get("content"))}
        calls = []
        for call in m.get("tool_calls") or []:
            fn = dict(call.get("function") or {})
            with contextlib.suppress(TypeError, ValueError):
                fn["arguments"] = json.loads(fn.get("arguments") or "{}")
            calls.append({**call, "function": fn})
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out


def _grammar(response_format: dict[str, Any] | None) -> str | None:
    if not response_format or response_format.get("type") in (None, "text"):
        return None
    schema = response_format.get("schema")
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
    try:
        return json_schema_to_gbnf(json.dumps(schema)) if schema else JSON_GBNF
    except Exception as exc:  # noqa: BLE001 -- the converter raises assorted errors
        raise RequestError(f"unsupported response_format schema: {exc}") from None


BARE_CALL = re.compile(r"^\s*(?:```(?:json)?\s*)?(\{.*\})\s*(?:```)?\s*$", re.S)


def _tool_calls(
    text: str, names: frozenset[str] = frozenset()
) -> tuple[str | None, list[dict[str, Any]]]:
    """Tool calls in Qwen's `<tool_call>{...}</tool_call>` format; or, when a whole answer is
    one bare JSON object naming one of the request's tools (`names`) with its arguments, that
    call: small Qwen models often drop the tags, and the student loop would read the call as
    a final answer."""
    found = [m.group(1) for m in TOOL_CALL.finditer(text)]
    bare = BARE_CALL.match(text) if not found and names else None
    if bare is not None:
        found = [bare.group(1)]
    calls = []
    for i, raw in enumerate(found):
        try:
            call = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(call, dict) or (bare is not None and call.get("name") not in names):
            continue
        args = call.get("arguments", {})
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:12]}_{i}",
                "type": "function",
                "function": {
                    "name": call.get("name", ""),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    content = text.split("<tool_call>", 1)[0].strip() if calls and bare is None else text
    if bare is not None and calls:
        content = ""
    return (content or None) if calls else content, calls


def _tool_names(tools: list[dict[str, Any]] | None) -> frozenset[str]:
    return frozenset(
        str((t.get("function") or {}).get("name")) for t in tools or [] if isinstance(t, dict)
    )


def _post(loop: asyncio.AbstractEventLoop, events: asyncio.Queue[Any], item: Any) -> None:
    """Hand an engine event to the request's event loop (gone at shutdown: then drop it)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(events.put_nowait, item)


@contextlib.asynccontextmanager
async def cancelled_when_client_leaves(receive: Any, job: Job) -> AsyncIterator[None]:
    """Cancel `job` as soon as its client hangs up (a client-side timeout, a retry, Ctrl-C).

    Uvicorn does not stop a request handler when its client goes: a plain reply is sent only
    once generation ends, and a streamed reply with tools sends nothing before then either, so
    an abandoned request kept its slot for up to `max_tokens` and retries competed with their
    own ghosts (`busy: 3` with one client). After the body is read, the ASGI `receive` waits
    until the client disconnects (or the reply is complete), so one waiting task is enough."""

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        job.cancelled.set()

    watcher = asyncio.create_task(watch())
    try:
        yield
    finally:
        watcher.cancel()


def build_app(engine: Engine, model_id: str) -> Any:
    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse(
            {"error": {"message": message, "type": "invalid_request_error"}}, status
        )

    async def models(_: Request) -> JSONResponse:
        data = [{"id": model_id, "object": "model", "created": 0, "owned_by": "bashgym"}]
        return JSONResponse({"object": "list", "data": data})

    async def health(_: Request) -> JSONResponse:
        busy = len(engine.active)
        return JSONResponse(
            {"status": "ok", "slots": engine.parallel, "busy": busy, "cancelled": engine.cancelled}
        )

    async def chat(request: Request) -> Any:
        try:
            body = await request.json()
            tools = body.get("tools") or None
            prompt = engine.formatter(messages=_messages(body["messages"]), tools=tools).prompt
            tokens = engine.tokenize(prompt)
            if len(tokens) >= engine.n_ctx:
                raise RequestError(
                    f"prompt is {len(tokens)} tokens; this server's context per slot is "
                    f"{engine.n_ctx} (start it with a larger --ctx)"
                )
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
            room = engine.n_ctx - len(tokens)
            stop = body.get("stop") or []
            temperature = body.get("temperature")
            seed = body.get("seed")
            sampler = engine.make_sampler(
                0.8 if temperature is None else float(temperature),
                float(body.get("top_p") or 0.95),
                time.time_ns() % 2**31 if seed is None else int(seed),
                float(body.get("frequency_penalty") or 0.0),
                float(body.get("presence_penalty") or 0.0),
            )
            grammar = engine.make_grammar(_grammar(body.get("response_format")))
        except (KeyError, TypeError, ValueError) as exc:
            return error(400, f"bad request: {exc}")
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        job = Job(
            prompt=tokens,
            max_tokens=min(int(max_tokens), room) if max_tokens else room,
            stop=[stop] if isinstance(stop, str) else list(stop),
            sampler=sampler,
            grammar=grammar,
            repeat_limit=REPEATED_CALLS if tools else 0,
            emit=lambda kind, payload: _post(loop, events, (kind, payload)),
        )
        engine.submit(job)
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        usage = lambda n: {  # noqa: E731
            "prompt_tokens": len(tokens),
            "completion_tokens": n,
            "total_tokens": len(tokens) + n,
        }

        if not body.get("stream"):
            try:
                async with cancelled_when_client_leaves(request.receive, job):
                    while True:
                        kind, payload = await events.get()
                        if kind == "error":
                            return error(500, payload)
                        if kind == "done":
                            break
            finally:
                job.cancelled.set()  # no-op when finished; frees the slot if the client left
            content, calls = (
                _tool_calls(payload["text"], _tool_names(tools)) if tools else (payload["text"], [])
            )
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            reason = "tool_calls" if calls else payload["reason"]
            return JSONResponse(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model_id,
                    "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                    "usage": usage(payload["tokens"]),
                }
            )

        def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> str:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_id,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                **extra,
            }
            return f"data: {json.dumps(data)}\n\n"

        async def stream() -> AsyncIterator[str]:
            async with cancelled_when_client_leaves(request.receive, job):
                async for part in _chunks():
                    yield part

        async def _chunks() -> AsyncIterator[str]:
            try:
                yield chunk({"role": "assistant", "content": ""})
                while True:
                    kind, payload = await events.get()
                    if kind == "delta" and not tools:
                        yield chunk({"content": payload})
                    elif kind == "error":
                        yield f"data: {json.dumps({'error': {'message': payload}})}\n\n"
                        break
                    elif kind == "done":
                        reason = payload["reason"]
                        if tools:  # tool calls are parsed from the whole text, sent at once
                            content, calls = _tool_calls(payload["text"], _tool_names(tools))
                            delta: dict[str, Any] = {"content": content}
                            if calls:
                                delta["tool_calls"] = [
                                    {"index": i, **c} for i, c in enumerate(calls)
                                ]
                                reason = "tool_calls"
                            yield chunk(delta)
                        yield chunk({}, reason, usage=usage(payload["tokens"]))
                        break
                yield "data: [DONE]\n\n"
            finally:
                job.cancelled.set()

        return StreamingResponse(stream(), media_type="text/event-stream")

    routes = [
        Route("/v1/models", models),
        Route("/health", health),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
    ]
    return Starlette(routes=routes)


def _die_with_parent(parent: int) -> None:
    """Exit when the process that started us is gone, even if it was SIGKILLed."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bashgym_models_embedded.server", description=__doc__
    )
    p.add_argument("--model", required=True, help="Path to a GGUF file.")
    p.add_argument("--model-id", default=None, help="Name served at /v1/models.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--ctx", type=int, default=4096, help="Context tokens per slot.")
    p.add_argument("--parallel", type=int, default=4, help="Slots decoded together.")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=512, help="Tokens per llama_decode call.")
    p.add_argument("--parent-pid", type=int, default=None, help="Exit when this process exits.")
    p.add_argument("--lora", default=None, help="A llama.cpp LoRA adapter GGUF to serve with.")
    p.add_argument("--lora-scale", type=float, default=1.0, help="The adapter's scale.")
    args = p.parse_args(argv)
    if args.parent_pid:
        _die_with_parent(args.parent_pid)
    llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))
    engine = Engine(
        args.model,
        n_ctx=args.ctx,
        parallel=args.parallel,
        threads=args.threads,
        n_batch=max(args.batch, args.parallel),
        lora=args.lora,
        lora_scale=args.lora_scale,
    )
    model_id = args.model_id or os.path.basename(args.model).removesuffix(".gguf")
    print(
        f"bashgym embedded server: {model_id} on http://{args.host}:{args.port}/v1 "
        f"({args.parallel} slots x {args.ctx} ctx, {args.threads} threads"
        f"{', LoRA ' + args.lora if args.lora else ''})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        build_app(engine, model_id),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    engine.stopping = True


@llama_cpp.llama_log_callback
def _QUIET(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    if level == 4:  # GGML_LOG_LEVEL_ERROR; llama.cpp's info chatter stays out of the log
        sys.stderr.write(text.decode(errors="replace"))


if __name__ == "__main__":
    main()
